package pool

import (
	"fmt"
	"sync/atomic"

	"github.com/skbdev/skb/skb"
)

// counters are the allocation counters of one class in one Cache, written
// by the cache's goroutine only.
type counters struct {
	allocs counter
	frees  counter
	misses counter
}

// cacheClass is a Cache's stack of free blocks of one class. Each block sits
// with a free header attached (skb.Buff.Attach), so that the common
// allocation pops one pointer and the common free pushes one.
type cacheClass struct {
	free      []*skb.Buff
	blockSize int
	st        counters // buffers (block and header together) allocated and freed, refills
	blk       counters // blocks alone (AllocShared, RecycleShared)
}

// fragState is a Cache's page-frag allocator state: the current page, on which
// the cache holds one reference, and the offset of its first free byte.
type fragState struct {
	page *skb.Page
	off  int
}

// Cache is a per-worker front end to a Pool: a stack of free blocks per size
// class (each paired with a header) and a stack of spare headers (for clones),
// refilled from and drained to the pool's depots in bulk (half a stack, one
// lock per move). It implements skb.Allocator.
//
// A Cache belongs to one goroutine: it is not safe for concurrent use. Buffers
// allocated from one Cache may be freed into another (that is how workers pass
// packets to each other); blocks then flow back through the depot.
type Cache struct {
	p        *Pool
	fastHome *Pool // p, or nil in debug mode: Free's fast path compares with it
	headroom int
	size     int
	debug    bool
	classTab [classTableMax/32 + 1]uint8
	tabExact bool // every class up to classTableMax a multiple of 32 bytes: the table's answer needs no walk
	ncls     int
	cls      [maxClasses]cacheClass
	hdrs     []*skb.Buff
	hdrSt    counters // headers alone (clones, AllocBuff, RecycleBuff)
	frag     fragState
	closed   bool
}

// Pool returns the pool c draws from.
func (c *Cache) Pool() *Pool { return c.p }

// Headroom returns the headroom Alloc reserves, in bytes.
func (c *Cache) Headroom() int { return c.headroom }

// classTableMax is the largest size the class table answers for, in bytes;
// larger requests walk the classes.
const classTableMax = 4096

// class returns the index of the smallest class of at least n bytes, or ncls.
// Up to classTableMax the table gives the class for the step's smallest size,
// and the walk moves past the ones a class boundary inside the step leaves
// too small (none, for class sizes that are multiples of 32).
func (c *Cache) class(n uint) int {
	i := 0
	if n <= classTableMax {
		i = int(c.classTab[(n+31)>>5])
		if c.tabExact {
			return i
		}
	}
	for i < c.ncls && n > uint(c.cls[i].blockSize) {
		i++
	}
	return i
}

// fillClassTab precomputes, for each step of 32 bytes up to classTableMax
// (sizes 32k-31 to 32k for entry k), the smallest class that holds the
// step's smallest size.
func (c *Cache) fillClassTab() {
	c.tabExact = true
	for i := range c.ncls {
		if b := c.cls[i].blockSize; b <= classTableMax && b%32 != 0 {
			c.tabExact = false
		}
	}
	for k := range c.classTab {
		n, i := max(uint(k)<<5, 31)-31, 0
		for i < c.ncls && n > uint(c.cls[i].blockSize) {
			i++
		}
		c.classTab[k] = uint8(i)
	}
}

// sizeError returns ErrTooBig for a size past the largest class and panics
// on a negative one, which is the caller's mistake, or on a closed cache.
func (c *Cache) sizeError(size int) error {
	c.checkOpen()
	if size < 0 {
		panic(fmt.Sprintf("pool: alloc of %d bytes", size))
	}
	return ErrTooBig
}

// Alloc returns an empty buffer with the pool's headroom and at least size
// bytes of tailroom, from the smallest class that fits. Packet data is not
// zeroed; metadata is cleared in one store (seed 003). The caller owns the
// returned buffer and must Free it or pass it on to a function that takes
// ownership. It returns ErrTooBig when no class fits and ErrExhausted when a
// bounded class is empty; it never blocks. It panics on a negative size and
// on a closed cache (Cache.Close, or Pool.Close, which closes every cache of
// its pool), whatever the size: allocating after Close is a use after close,
// not a condition to handle. Pool.Alloc returns ErrClosed instead. Every
// allocation function of a Cache (AllocN, AllocShared, AllocBuff, Clone,
// AllocFrag) panics on a closed cache in the same way.
func (c *Cache) Alloc(size int) (*skb.Buff, error) {
	i := c.class(uint(size) + uint(c.headroom))
	if i == c.ncls || size < 0 {
		return nil, c.sizeError(size)
	}
	cc := &c.cls[i]
	if len(cc.free) == 0 {
		if err := c.refill(i); err != nil {
			return nil, err
		}
	}
	n := len(cc.free) - 1
	b := cc.free[n]
	cc.free = cc.free[:n]
	b.Reuse(c.headroom)
	cc.st.allocs.inc()
	if c.debug {
		c.p.dbg.alloc(b, 2)
	}
	return b, nil
}

// AllocN fills bs with new buffers as Alloc(size) would, moving blocks from
// the depot in bulk when the cache runs short. It returns how many it
// allocated: len(bs), or fewer with ErrExhausted (or 0 with ErrTooBig). The
// caller owns the buffers in bs[:n].
func (c *Cache) AllocN(bs []*skb.Buff, size int) (int, error) {
	i := c.class(uint(size) + uint(c.headroom))
	if i == c.ncls || size < 0 {
		return 0, c.sizeError(size)
	}
	cc := &c.cls[i]
	for k := range bs {
		if len(cc.free) == 0 {
			if err := c.refill(i); err != nil {
				return k, err
			}
		}
		n := len(cc.free) - 1
		b := cc.free[n]
		cc.free = cc.free[:n]
		b.Reuse(c.headroom)
		cc.st.allocs.inc()
		if c.debug {
			c.p.dbg.alloc(b, 2)
		}
		bs[k] = b
	}
	return len(bs), nil
}

// Free frees b into this cache (kfree_skb): the header always, the data block
// when b held its last reference. Free takes ownership of b; b may have been
// allocated from any Cache of the same pool (buffers of another pool go back
// to that pool). A nil b is nothing to free, as for kfree_skb(NULL). It
// panics on a double free.
func (c *Cache) Free(b *skb.Buff) {
	if b == nil {
		return
	}
	// The common case: a never-cloned linear buffer of this pool. Its header
	// goes back with the block it holds: the next Alloc of this class gets
	// both with one pop.
	if b.Home() == c.fastHome {
		if s, i := b.ReleasePlain(); s != nil {
			cc := &c.cls[i]
			if len(cc.free) == cap(cc.free) {
				c.drain(i)
			}
			cc.free = append(cc.free, b)
			cc.st.frees.inc()
			return
		}
	}
	if c.closed {
		// A closed cache keeps nothing: the buffer goes to the depots.
		b.FreeTo(c.p)
		return
	}
	s := b.Release(c)
	if s == nil {
		// Another buffer still shares the data: only the header comes back.
		if b.Home() != c.p || c.debug || len(c.hdrs) == cap(c.hdrs) {
			c.RecycleBuff(b)
			return
		}
		c.hdrs = append(c.hdrs, b)
		c.hdrSt.frees.inc()
		return
	}
	if b.Home() != c.p || s.Home() != c.p || c.debug {
		c.RecycleShared(s)
		c.RecycleBuff(b)
		return
	}
	cc := &c.cls[s.Class()]
	if len(cc.free) == cap(cc.free) {
		c.drain(s.Class())
	}
	cc.free = append(cc.free, b)
	cc.st.frees.inc()
}

// FreeN frees every buffer in bs as Free does (nil entries are skipped) and
// clears bs. FreeN takes ownership of the buffers.
func (c *Cache) FreeN(bs []*skb.Buff) {
	for i, b := range bs {
		c.Free(b)
		bs[i] = nil
	}
}

// Clone returns a new buffer sharing b's data (skb.Buff.Clone, skb_clone),
// taking the header from this cache without going through the skb.Allocator
// interface: the fast path for sending one buffer many times. The caller keeps
// ownership of b, owns the returned buffer and must Free it or pass it on to a
// function that takes ownership. It does not fail.
func (c *Cache) Clone(b *skb.Buff) *skb.Buff {
	if len(c.hdrs) == 0 {
		c.checkOpen()
		c.hdrs = c.p.hdrs.take(c.hdrs, c.size/2)
		c.hdrSt.misses.inc()
	}
	n := len(c.hdrs) - 1
	h := c.hdrs[n]
	c.hdrs = c.hdrs[:n]
	b.CloneInto(h)
	c.hdrSt.allocs.inc()
	if c.debug {
		c.p.dbg.alloc(h, 2)
	}
	return h
}

// AllocBuff returns an unused header (skb.Allocator), for Clone. The caller
// owns it and must build or clone into it, or recycle it.
func (c *Cache) AllocBuff() (*skb.Buff, error) {
	b := c.popHdr()
	c.hdrSt.allocs.inc()
	if c.debug {
		c.p.dbg.alloc(b, 2)
	}
	return b, nil
}

// AllocShared returns a reset data block of at least size bytes
// (skb.Allocator). The caller owns it and must build a buffer on it or recycle
// it. It returns ErrTooBig or ErrExhausted; it panics on a negative size and
// on a closed cache, as Alloc does.
func (c *Cache) AllocShared(size int) (*skb.Shared, error) {
	i := c.class(uint(size))
	if i == c.ncls || size < 0 {
		return nil, c.sizeError(size)
	}
	cc := &c.cls[i]
	if len(cc.free) == 0 {
		if err := c.refill(i); err != nil {
			return nil, err
		}
	}
	n := len(cc.free) - 1
	h := cc.free[n]
	cc.free = cc.free[:n]
	s := h.Detach()
	c.pushHdr(h)
	s.Reset()
	cc.blk.allocs.inc()
	return s, nil
}

// RecycleShared takes back a data block whose last reference was dropped
// (skb.Recycler); blocks of another pool go to that pool.
func (c *Cache) RecycleShared(s *skb.Shared) {
	if s.Home() != c.p || c.closed {
		s.Home().RecycleShared(s)
		return
	}
	if c.debug {
		c.p.dbg.poison(s)
	}
	h := c.popHdr()
	h.Attach(s)
	cc := &c.cls[s.Class()]
	if len(cc.free) == cap(cc.free) {
		c.drain(s.Class())
	}
	cc.free = append(cc.free, h)
	cc.blk.frees.inc()
}

// RecycleBuff takes back a header (skb.Recycler); headers of another pool go
// to that pool. RecycleBuff takes ownership of b, which must already be
// released (skb.Buff.Release): users free buffers with Free.
func (c *Cache) RecycleBuff(b *skb.Buff) {
	if b.Home() != c.p || c.closed {
		b.Home().RecycleBuff(b)
		return
	}
	c.hdrSt.frees.inc()
	if c.debug {
		if b = c.p.dbg.free(b, 2); b == nil {
			return
		}
	}
	c.pushHdr(b)
}

func (c *Cache) pushHdr(b *skb.Buff) {
	if len(c.hdrs) == cap(c.hdrs) {
		half := len(c.hdrs) / 2
		c.p.hdrs.give(c.hdrs[half:])
		clear(c.hdrs[half:])
		c.hdrs = c.hdrs[:half]
	}
	c.hdrs = append(c.hdrs, b)
}

func (c *Cache) popHdr() *skb.Buff {
	if len(c.hdrs) == 0 {
		c.checkOpen()
		c.hdrs = c.p.hdrs.take(c.hdrs, c.size/2)
		c.hdrSt.misses.inc()
	}
	n := len(c.hdrs) - 1
	b := c.hdrs[n]
	c.hdrs = c.hdrs[:n]
	return b
}

// checkOpen panics on a closed cache. Close empties every stack of the cache
// and drops its frag page, so each allocation from a closed cache reaches a
// refill or an error path, where checkOpen is called: the fast paths do not
// test c.closed.
func (c *Cache) checkOpen() {
	if c.closed {
		if c.p.shut.Load() {
			// Pool.Close closes every cache: most often a device still
			// open on a pool closed before it.
			panic(fmt.Sprintf("pool: allocation from a closed cache: its pool %s was closed while the cache was in use (close the devices that allocate from a pool before the pool)", c.p.label()))
		}
		panic("pool: allocation from a closed cache")
	}
}

// refill moves half a stack of class i from the depot.
func (c *Cache) refill(i int) error {
	c.checkOpen()
	cc := &c.cls[i]
	var err error
	cc.free, err = c.p.take(c.p.classes[i], cc.free, max(1, cap(cc.free)/2))
	if err == nil {
		// A miss is an allocation that refilled first; one the pool
		// refused is no allocation (it counts in Exhausted).
		cc.st.misses.inc()
	}
	return err
}

// drain moves half a stack of class i to the depot.
func (c *Cache) drain(i int) {
	cc := &c.cls[i]
	half := len(cc.free) / 2
	c.p.give(c.p.classes[i], cc.free[half:])
	clear(cc.free[half:])
	cc.free = cc.free[:half]
}

// AllocFrag carves size bytes from the cache's current page for a receive
// fragment (page_frag_alloc), taking a new page when the current one is full;
// offsets are aligned to 64 bytes. It returns the page and the offset of the
// fragment in it; the caller owns one reference on the page and passes it to
// skb's AddRxFrag or drops it with Put. A size of 0 gives an empty fragment
// (of the current page, or of a new one when the cache holds none, which a
// bounded pool may refuse with ErrExhausted).
// It returns ErrTooBig when size exceeds the page size and ErrExhausted when
// pages are bounded and none is free. It panics on a negative size and on a
// closed cache, as Alloc does. The cache holds a reference of its own on the
// page it carves from; a Put beyond the references its fragments' holders
// took, which would drop that one, panics at that Put (see RecyclePage).
func (c *Cache) AllocFrag(size int) (*skb.Page, int, error) {
	if size < 0 {
		c.checkOpen()
		panic(fmt.Sprintf("pool: alloc frag of %d bytes", size))
	}
	if size > c.p.cfg.PageSize {
		c.checkOpen()
		return nil, 0, ErrTooBig
	}
	f := &c.frag
	if f.page == nil || f.off+size > f.page.Len() {
		c.checkOpen() // a closed cache holds no page
		if f.page != nil {
			c.p.pages.endingCarve(f.page)
			f.page.Put()
			c.p.pages.endCarve(f.page)
			f.page = nil
		}
		pg, err := c.p.pages.carve()
		if err != nil {
			return nil, 0, err
		}
		f.page, f.off = pg, 0
	}
	off := f.off
	f.off = roundUp(off+size, 64)
	f.page.Get()
	return f.page, off, nil
}

// Close hands the cache's blocks, headers and page back to the pool and folds
// its counters into the pool's. Buffers freed into a closed cache go straight
// to the pool's depots; allocating from it panics. Close is idempotent.
func (c *Cache) Close() {
	if c.closed {
		return
	}
	c.closed = true
	c.fastHome = nil
	for i := range c.ncls {
		cc := &c.cls[i]
		c.p.give(c.p.classes[i], cc.free)
		clear(cc.free)
		cc.free = cc.free[:0]
	}
	c.p.hdrs.give(c.hdrs)
	clear(c.hdrs)
	c.hdrs = c.hdrs[:0]
	if c.frag.page != nil {
		c.p.pages.endingCarve(c.frag.page)
		c.frag.page.Put()
		c.p.pages.endCarve(c.frag.page)
		c.frag.page = nil
	}
	p := c.p
	p.mu.Lock()
	for i, cp := range p.caches {
		if cp == c {
			p.caches = append(p.caches[:i], p.caches[i+1:]...)
			break
		}
	}
	for i := range c.ncls {
		addCounters(&p.retiredCls[i], &c.cls[i].st)
		addCounters(&p.retiredCls[i], &c.cls[i].blk)
		addCounters(&p.retiredHdr, &c.cls[i].st)
		p.retiredHdr.misses.Add(-c.cls[i].st.misses.load())
	}
	addCounters(&p.retiredHdr, &c.hdrSt)
	p.mu.Unlock()
}

func addCounters(dst *sharedCounters, src *counters) {
	dst.allocs.Add(src.allocs.load())
	dst.frees.Add(src.frees.load())
	dst.misses.Add(src.misses.load())
}

// sharedCounters are allocation counters written by any goroutine.
type sharedCounters struct {
	allocs atomic.Uint64
	frees  atomic.Uint64
	misses atomic.Uint64
}
