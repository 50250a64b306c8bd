package skb

import (
	"fmt"
	"sync/atomic"
)

var describer atomic.Pointer[func(*Buff) string]

// SetDescriber installs fn to name a buffer's allocation and free sites in the
// panic messages for double free and use after free. Allocators install one in
// their debug mode; nil removes it. Safe for concurrent use.
func SetDescriber(fn func(b *Buff) string) {
	if fn == nil {
		describer.Store(nil)
		return
	}
	describer.Store(&fn)
}

func (b *Buff) describe() string {
	if fn := describer.Load(); fn != nil {
		return (*fn)(b)
	}
	return fmt.Sprintf("buffer %p (enable the pool's debug mode to see where it was allocated and freed)", b)
}

// IsLive reports whether b is allocated: built or cloned and not yet freed.
func (b *Buff) IsLive() bool { return b.state != stateFree }

// Free drops b: the header goes back to its allocator and, when b held the last
// reference to its data, the destructor runs, the frags and frag list are
// released and the data block goes back too (kfree_skb). Free takes ownership
// of b; b must not be used afterwards: its header and block go to the next
// allocation, so a stale pointer would alias another packet (the pool's debug
// mode delays reuse and poisons freed data, and the skbdebug build tag makes
// every operation on a freed buffer panic). A nil b is nothing to free, as
// for kfree_skb(NULL). It panics on a double free. Hot paths free into their
// per-worker cache instead (pool.Cache.Free), which is faster.
func (b *Buff) Free() { b.FreeTo(nil) }

// FreeTo is Free with r receiving the header, the data block and the frag list
// members (their own allocators when r is nil). FreeTo takes ownership of b;
// a nil b is nothing to free.
func (b *Buff) FreeTo(r Recycler) {
	if b == nil {
		return
	}
	s := b.Release(r)
	if r == nil {
		if s != nil {
			s.home.RecycleShared(s)
		}
		b.home.RecycleBuff(b)
		return
	}
	if s != nil {
		r.RecycleShared(s)
	}
	r.RecycleBuff(b)
}

// Release marks b free and drops its reference on its data block. When b held
// the last reference it runs the destructor, releases the frags and frees the
// frag list members (to r, or to their own allocators when r is nil) and
// returns the block for the caller to recycle; otherwise it returns nil. The
// header itself is the caller's to recycle. For allocators: users call Free.
// It panics on a double free.
func (b *Buff) Release(r Recycler) *Shared {
	// The common case, inlined into allocators: a buffer that was never
	// cloned is the only user of its data (no atomic operation needed, as in
	// skb_release_data), and plain linear data has nothing else to release.
	if b.state != stateLive {
		return b.releaseSlow(r)
	}
	b.state = stateFree
	return b.shinfo
}

// ReleasePlain is Release for allocators' fast path: when b was never cloned
// and holds plain linear data in a block of its own allocator, it marks b
// free and returns the block and its class (Shared.Class, read from b's own
// first cache line, not from the block's shared info), which the allocator
// may keep paired with b. Otherwise it does nothing and returns nil, and the
// caller uses Release.
func (b *Buff) ReleasePlain() (*Shared, int) {
	if b.state != stateLive {
		return nil, 0
	}
	b.state = stateFree
	return b.shinfo, int(b.class)
}

// doubleFreeHint ends a double free's panic message with its usual
// causes: the second free is often a device's, freeing a buffer that its
// owner had passed to Xmit twice (or freed, then passed on).
const doubleFreeHint = " (freed already: a buffer passed to Free, to Xmit or to another owner is no longer the caller's, and a device frees each buffer Xmit took once: the same buffer given to Xmit twice is freed twice, and the second free panics here, inside the device)"

func (b *Buff) releaseSlow(r Recycler) *Shared {
	switch b.state {
	case stateFree:
		panic("skb: double free of " + b.describe() + doubleFreeHint)
	case stateDying:
		panic("skb: free of " + b.describe() + " inside its data's destructor")
	}
	s := b.shinfo
	if b.state == stateCloned && atomic.AddInt32(&s.dataref, -1) != 0 {
		b.state = stateFree
		b.shClean = false
		return nil
	}
	if s.hasExtra() {
		// b is the data's last user, still live for the destructor.
		releaseShared(b, s, r)
	}
	b.state = stateFree
	b.shClean = false
	return s
}

// releaseShared runs the destructor, drops the frags' page references and
// frees the frag list of s, whose last user was b.
func releaseShared(b *Buff, s *Shared, r Recycler) {
	if d := s.destructor; d != nil {
		// The destructor sees b dying (Free, Clone and reallocation
		// panic); b's state comes back after, for the caller: Release
		// marks it free, a reallocation (dropData) goes on with it.
		s.destructor = nil
		st := b.state
		b.state = stateDying
		d(b)
		b.state = st
	}
	for i := range int(s.hot.nrFrags) {
		s.frags[i].page.Put()
		s.frags[i] = Frag{}
	}
	s.hot.nrFrags = 0
	for c := s.fragList; c != nil; {
		n := c.next
		c.next = nil
		c.FreeTo(r)
		c = n
	}
	s.fragList = nil
}
