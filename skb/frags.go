package skb

import (
	"fmt"
	"math"
)

// NrFrags returns the number of page fragments (nr_frags).
func (b *Buff) NrFrags() int {
	b.checkLive()
	return int(b.shinfo.hot.nrFrags)
}

// Frag returns page fragment i. It panics if i is not below NrFrags.
func (b *Buff) Frag(i int) Frag {
	b.checkLive()
	if uint(i) >= uint(b.shinfo.hot.nrFrags) {
		panic(fmt.Sprintf("skb: frag %d of %d", i, b.shinfo.hot.nrFrags))
	}
	return b.shinfo.frags[i]
}

// Frags returns the page fragments in order. The returned slice aliases b's
// shared info and is valid until b is changed, unshared or freed; it must not
// be modified. Its capacity is its length, so an append copies.
func (b *Buff) Frags() []Frag {
	b.checkLive()
	n := b.shinfo.hot.nrFrags
	return b.shinfo.frags[:n:n]
}

// AddRxFrag appends size bytes at offset off of page p as the next page
// fragment (skb_add_rx_frag) and adds them to Len and DataLen. The frags come
// after the linear data and before the frag list, as in the kernel: a frag
// added to a buffer that has a frag list holds bytes that come before the
// list's. AddRxFrag takes ownership of one reference on p, the one the caller
// got from its allocator or took with Get. It panics if p is nil, if b
// already has MaxFrags fragments, if the range is outside p, if the packet
// would grow past 4 GiB, or if b's data is shared.
func (b *Buff) AddRxFrag(p *Page, off, size int) {
	b.checkLive()
	if p == nil {
		panic(fmt.Sprintf("skb: frag off %d size %d of a nil page", off, size))
	}
	s := b.shinfo
	if s.hot.nrFrags >= MaxFrags {
		panic(fmt.Sprintf("skb: add frag to a buffer with %d frags", s.hot.nrFrags))
	}
	if off < 0 || size < 0 || off > len(p.buf)-size {
		panic(fmt.Sprintf("skb: frag off %d size %d outside a page of %d", off, size, len(p.buf)))
	}
	if uint64(b.m.len)+uint64(size) > math.MaxUint32 {
		panic(fmt.Sprintf("skb: frag of %d bytes on a packet of %d: longer than 4 GiB", size, b.m.len))
	}
	b.writableShinfo("add frag")
	s.frags[s.hot.nrFrags] = Frag{page: p, off: uint32(off), size: uint32(size)}
	s.hot.nrFrags++
	b.markExtra()
	b.m.len += uint32(size)
	b.m.dataLen += uint32(size)
}

// FragList returns the first buffer of the frag list, or nil; Next walks it.
// The members belong to b's shared info: they must not be freed or changed.
func (b *Buff) FragList() *Buff {
	b.checkLive()
	return b.shinfo.fragList
}

// AddFragList appends c, and any buffers chained after it, to the end of b's
// frag list (skb_shinfo(skb)->frag_list) and adds their length to Len and
// DataLen. AddFragList takes ownership of c. It panics if b's data is shared,
// if c is nil, freed, b, or already on b's frag list (a list that would loop),
// or if the packet would grow past 4 GiB.
func (b *Buff) AddFragList(c *Buff) {
	b.checkLive()
	if c == nil {
		panic("skb: nil buffer added to a frag list")
	}
	b.writableShinfo("add frag list")
	s := b.shinfo
	// The chain to add: live buffers, none of them b or already on b's
	// list, and its length, before anything changes.
	add := uint64(0)
	for e := c; e != nil; e = e.next {
		switch {
		case e == b || holds(e, b):
			panic("skb: buffer added to its own frag list")
		case e.state == stateFree:
			panic("skb: freed buffer added to a frag list: " + e.describe())
		}
		for f := s.fragList; f != nil; f = f.next {
			if f == e {
				panic("skb: buffer added twice to a frag list: " + e.describe())
			}
		}
		for f := c; ; f = f.next {
			if f == e.next {
				panic("skb: frag list chain that loops: " + e.describe())
			}
			if f == e {
				break
			}
		}
		add += uint64(e.m.len)
	}
	if uint64(b.m.len)+add > math.MaxUint32 {
		panic(fmt.Sprintf("skb: frag list of %d bytes on a packet of %d: longer than 4 GiB", add, b.m.len))
	}
	p := &s.fragList
	for *p != nil {
		p = &(*p).next
	}
	*p = c
	b.markExtra()
	b.m.len += uint32(add)
	b.m.dataLen += uint32(add)
}

// holds reports whether b is on t's frag list or, deeper, on a frag list of
// one of its members.
func holds(t, b *Buff) bool {
	if t.shinfo == nil {
		return false
	}
	for f := t.shinfo.fragList; f != nil; f = f.next {
		if f == b || holds(f, b) {
			return true
		}
	}
	return false
}

// pagedLen returns the bytes held by b's page frags (not its frag list).
func (b *Buff) pagedLen() int {
	n := 0
	for _, f := range b.Frags() {
		n += int(f.size)
	}
	return n
}
