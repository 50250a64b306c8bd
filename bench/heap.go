package bench

import (
	"github.com/skbdev/skb/skb"
)

// heapAlloc hands out buffers whose data comes from make([]byte) for every
// packet, as a Go program without a pool gets them: the baseline of seed
// 003. Buffer headers and shared infos are kept on free lists, so that the
// one allocation per packet is the data block; freed data is left to the
// garbage collector. It implements skb.Allocator and skb.Recycler, and
// belongs to one goroutine.
type heapAlloc struct {
	headroom int
	bufs     []*skb.Buff
	shared   []*skb.Shared
}

// maxHeapFree bounds each free list.
const maxHeapFree = 4096

func newHeapAlloc(headroom int) *heapAlloc { return &heapAlloc{headroom: headroom} }

// Alloc returns an empty buffer over a new make([]byte) data block with the
// allocator's headroom and size bytes of room. The caller owns it.
func (h *heapAlloc) Alloc(size int) (*skb.Buff, error) {
	s, _ := h.AllocShared(h.headroom + size)
	b, _ := h.AllocBuff()
	b.Build(s, h.headroom)
	return b, nil
}

// AllocBuff returns a free header (skb.Allocator).
func (h *heapAlloc) AllocBuff() (*skb.Buff, error) {
	if n := len(h.bufs); n > 0 {
		b := h.bufs[n-1]
		h.bufs = h.bufs[:n-1]
		return b, nil
	}
	b := new(skb.Buff)
	b.InitBuff(h)
	return b, nil
}

// AllocShared returns a shared info over a new make([]byte) block of size
// bytes, with dataref 1 (skb.Allocator).
func (h *heapAlloc) AllocShared(size int) (*skb.Shared, error) {
	var s *skb.Shared
	if n := len(h.shared); n > 0 {
		s = h.shared[n-1]
		h.shared = h.shared[:n-1]
	} else {
		s = new(skb.Shared)
	}
	s.InitShared(make([]byte, size), 0, h, 0)
	s.Reset()
	return s, nil
}

// RecycleBuff takes back a header (skb.Recycler).
func (h *heapAlloc) RecycleBuff(b *skb.Buff) {
	if len(h.bufs) < maxHeapFree {
		h.bufs = append(h.bufs, b)
	}
}

// RecycleShared takes back a shared info and lets its data block go to the
// garbage collector (skb.Recycler).
func (h *heapAlloc) RecycleShared(s *skb.Shared) {
	s.InitShared(nil, 0, h, 0)
	if len(h.shared) < maxHeapFree {
		h.shared = append(h.shared, s)
	}
}
