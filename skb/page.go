package skb

import (
	"fmt"
	"sync/atomic"
)

// MaxFrags is the most page fragments one buffer holds: the kernel's
// MAX_SKB_FRAGS with its default CONFIG_MAX_SKB_FRAGS of 17 (65536/4096 + 1).
const MaxFrags = 17

// PageRecycler takes back a Page whose last reference was dropped. Allocators
// (package pool) implement it; users do not call it.
type PageRecycler interface {
	// RecyclePage receives p once its reference count has reached zero. It is
	// called from whatever goroutine dropped the last reference.
	RecyclePage(p *Page)
}

// Page is a reference-counted piece of memory that page fragments point into,
// as a struct page is for skb_frag_t. Its memory is usually a block of an
// off-heap arena; Addr is the block's offset in that arena.
//
// A Page is handed out with one reference. Get takes another, Put drops one;
// the Page goes back to its recycler when the count reaches zero. Get and Put
// are safe for concurrent use.
type Page struct {
	buf  []byte
	refs atomic.Int32
	addr uint64
	home PageRecycler
}

// InitPage sets up p over buf, which it will describe until the allocator
// reuses it. addr is buf's offset in its arena. For allocators only.
func (p *Page) InitPage(buf []byte, addr uint64, home PageRecycler) {
	p.buf = buf
	p.addr = addr
	p.home = home
	p.refs.Store(0)
}

// ResetRefs gives p its first reference as an allocator hands it out. For
// allocators only; it panics if p is still referenced.
func (p *Page) ResetRefs() {
	if r := p.refs.Load(); r != 0 {
		panic(fmt.Sprintf("skb: page %#x handed out with %d references", p.addr, r))
	}
	p.refs.Store(1)
}

// Bytes returns the page's whole memory. The slice aliases the page and is
// valid while the caller holds a reference.
func (p *Page) Bytes() []byte { return p.buf }

// Len returns the page's size in bytes.
func (p *Page) Len() int { return len(p.buf) }

// Addr returns the offset of the page's first byte in its arena.
func (p *Page) Addr() uint64 { return p.addr }

// Refs returns the current reference count.
func (p *Page) Refs() int { return int(p.refs.Load()) }

// Get takes one more reference on p (get_page). It panics if p holds none,
// leaving the count as it was.
func (p *Page) Get() {
	if p.refs.Add(1) <= 1 {
		p.refs.Add(-1)
		panic(fmt.Sprintf("skb: get on free page %#x", p.addr))
	}
}

// Put drops one reference (put_page). When it was the last, p goes back to its
// recycler and must not be used again. It panics on a page with no reference,
// leaving the count as it was.
func (p *Page) Put() {
	switch r := p.refs.Add(-1); {
	case r == 0:
		p.home.RecyclePage(p)
	case r < 0:
		p.refs.Add(1)
		panic(fmt.Sprintf("skb: put on free page %#x (refs %d)", p.addr, r+1))
	}
}

// Frag is one page fragment of a buffer's paged data (skb_frag_t): Size bytes
// at offset Off of a Page. A buffer's frags follow its linear data in order.
type Frag struct {
	page      *Page
	off, size uint32
}

// Page returns the page the fragment points into.
func (f Frag) Page() *Page { return f.page }

// Off returns the fragment's offset in its page, in bytes.
func (f Frag) Off() int { return int(f.off) }

// Size returns the fragment's length in bytes.
func (f Frag) Size() int { return int(f.size) }

// Bytes returns the fragment's bytes. The slice aliases the page and is valid
// until the buffer holding the fragment is changed or freed; it may be shared
// with other buffers, so it must not be written unless the page's Refs is 1
// and the buffer is not Cloned (a clone shares the frags through the
// shared info, without a reference of its own on the page).
func (f Frag) Bytes() []byte {
	return f.page.buf[f.off : f.off+f.size : f.off+f.size]
}
