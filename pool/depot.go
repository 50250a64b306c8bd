package pool

import (
	"errors"
	"fmt"
	"sync"

	"github.com/skbdev/skb/skb"
)

// hdrSlab is how many buffer headers the header depot makes at a time.
const hdrSlab = 256

// hdrDepot holds free buffer headers; headers live in slabs on the Go heap and
// are never returned to it, so the depot grows without bound (one header per
// buffer or clone ever alive at once).
type hdrDepot struct {
	p     *Pool
	mu    sync.Mutex
	free  []*skb.Buff
	total int
}

func (d *hdrDepot) init(p *Pool) { d.p = p }

// take moves up to n headers onto dst, making a slab when the depot is empty.
func (d *hdrDepot) take(dst []*skb.Buff, n int) []*skb.Buff {
	d.mu.Lock()
	if len(d.free) == 0 {
		slab := make([]skb.Buff, max(n, hdrSlab))
		for i := len(slab) - 1; i >= 0; i-- {
			slab[i].InitBuff(d.p)
			d.free = append(d.free, &slab[i])
		}
		d.total += len(slab)
	}
	k := min(n, len(d.free))
	dst = append(dst, d.free[len(d.free)-k:]...)
	clear(d.free[len(d.free)-k:])
	d.free = d.free[:len(d.free)-k]
	d.mu.Unlock()
	return dst
}

func (d *hdrDepot) give(src []*skb.Buff) {
	d.mu.Lock()
	d.free = append(d.free, src...)
	d.mu.Unlock()
}

// pageDepot holds the page-frag allocator's free pages.
type pageDepot struct {
	p         *Pool
	mu        sync.Mutex
	free      []*skb.Page
	arenas    []*Arena
	pages     int
	st        sharedCounters
	exhausted uint64
	// carving holds the pages caches carve fragments from (AllocFrag),
	// on each of which the cache holds a reference: one of them coming
	// back to the depot means a Put too many, and the cache would go on
	// handing out fragments of a page another cache may take.
	carving map[*skb.Page]bool // true: ending (the cache's Put under way)
}

func (d *pageDepot) init(p *Pool) { d.p = p }

// pagesPerArena is how many pages one page arena holds (2 MiB of 32 KiB pages).
func (d *pageDepot) pagesPerArena() int { return max(4, hugePageSize/d.p.cfg.PageSize) }

// get returns a free page holding one reference, mapping an arena of pages
// when none is free. It returns ErrClosed once the pool is closed: the check
// is made under d.mu, which unmapAll takes after Close marks the pool shut, so
// no arena is mapped after the depot's arenas were unmapped.
func (d *pageDepot) get() (*skb.Page, error) { return d.take(false) }

// carve is get for a cache's page-frag allocator: the page is marked as
// carved from until endCarve.
func (d *pageDepot) carve() (*skb.Page, error) { return d.take(true) }

// endCarve unmarks pg, which the cache carves no more, once the cache has
// dropped its reference (after endingCarve): a page RecyclePage took
// meanwhile was unmarked there, and one another cache carves now is left
// marked.
func (d *pageDepot) endCarve(pg *skb.Page) {
	d.mu.Lock()
	if d.carving[pg] {
		delete(d.carving, pg)
	}
	d.mu.Unlock()
}

// endingCarve marks pg as ending: the cache's own Put, which may recycle it, follows.
func (d *pageDepot) endingCarve(pg *skb.Page) {
	d.mu.Lock()
	d.carving[pg] = true
	d.mu.Unlock()
}

func (d *pageDepot) take(carve bool) (*skb.Page, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.p.shut.Load() {
		return nil, ErrClosed
	}
	if len(d.free) == 0 {
		n := d.pagesPerArena()
		if m := d.p.cfg.MaxPages; m > 0 {
			n = min(n, m-d.pages)
		}
		if n <= 0 {
			d.exhausted++
			return nil, ErrExhausted
		}
		size := d.p.cfg.PageSize
		a, err := mapArena(size, n, d.p.cfg.HugePages, d.p.cfg.Populate)
		if err != nil {
			return nil, err
		}
		slab := make([]skb.Page, n)
		for i := n - 1; i >= 0; i-- {
			slab[i].InitPage(a.mem[i*size:(i+1)*size], uint64(i*size), d.p)
			d.free = append(d.free, &slab[i])
		}
		d.arenas = append(d.arenas, a)
		d.pages += n
	}
	pg := d.free[len(d.free)-1]
	d.free[len(d.free)-1] = nil
	d.free = d.free[:len(d.free)-1]
	pg.ResetRefs()
	d.st.allocs.Add(1)
	if carve {
		if d.carving == nil {
			d.carving = make(map[*skb.Page]bool)
		}
		d.carving[pg] = false
	}
	return pg, nil
}

// RecyclePage takes back a page whose last reference was dropped
// (skb.PageRecycler). Safe for concurrent use. It panics, naming the page,
// when a cache still carves fragments from pg: its last reference was the
// cache's own, so some holder of a fragment called Put once too often (the
// stack of the panic is that Put's). The page then keeps the cache's
// reference, as before that Put.
func (p *Pool) RecyclePage(pg *skb.Page) {
	d := &p.pages
	d.mu.Lock()
	if ending, ok := d.carving[pg]; ok && ending {
		delete(d.carving, pg)
	} else if ok {
		pg.ResetRefs() // the cache's reference, which the Put took
		d.mu.Unlock()
		panic(fmt.Sprintf("pool: page %p (address %#x in its arena) freed while a cache still carves fragments from it: one Put more than the references taken (AllocFrag gives one, Get one more)", pg, pg.Addr()))
	}
	if p.dbg != nil {
		// Debug mode: a frag read after its page's last Put shows 0x6b,
		// as freed blocks do.
		poisonBytes(pg.Bytes())
	}
	d.free = append(d.free, pg)
	d.st.frees.Add(1)
	d.mu.Unlock()
}

// AllocPage returns a whole page of the page-frag allocator's size with one
// reference, which the caller owns and drops with Put. Safe for concurrent
// use. It returns ErrExhausted when pages are bounded and none is free, and
// ErrClosed after Close.
func (p *Pool) AllocPage() (*skb.Page, error) { return p.pages.get() }

func (d *pageDepot) unmapAll() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, a := range d.arenas {
		errs = append(errs, a.unmap())
	}
	d.arenas, d.free, d.carving = nil, nil, nil
	return errors.Join(errs...)
}
