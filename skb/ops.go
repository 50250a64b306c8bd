package skb

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// netSKBPad is the alignment of extra headroom made by CowHead: NET_SKB_PAD,
// max(32, L1_CACHE_BYTES), which is 64 on x86-64.
const netSKBPad = 64

// needAllocator panics, naming op, when a is nil: an operation that must
// allocate was given nothing to allocate from, the caller's bug.
func needAllocator(a Allocator, op string) {
	if a == nil {
		panic("skb: " + op + " with a nil Allocator")
	}
}

// maxBlock is the largest data block, in bytes, that an operation asks its
// allocator for: a buffer's offsets are 32-bit, and the bound fits an int on
// every platform. A block the sizes given by the caller would make larger
// (their sum past maxBlock, or past what an int holds) is ErrTooBig, without
// asking the allocator.
const maxBlock = math.MaxInt32

// blockSize returns head+mid+tail, each not negative, and false when the sum
// exceeds maxBlock; it does not overflow, whatever the arguments.
func blockSize(head, mid, tail int) (int, bool) {
	if head > maxBlock || mid > maxBlock-head || tail > maxBlock-head-mid {
		return 0, false
	}
	return head + mid + tail, true
}

// pullTailSlack is the extra tailroom taken when PskbMayPull or Linearize must
// reallocate, so that the next pull does not reallocate again
// (__pskb_pull_tail's "eat + 128").
const pullTailSlack = 128

// Clone returns a new buffer sharing b's data and shared info, with a copy of
// b's metadata and geometry; dataref rises by one (skb_clone). Neither b nor
// the clone may then write the data until it calls Unshare or CowHead. The
// caller keeps ownership of b, owns the returned buffer and must Free it or
// pass it on to a function that takes ownership. Clone returns the allocator's
// error when no header is available.
func (b *Buff) Clone(a Allocator) (*Buff, error) {
	b.checkClonable()
	needAllocator(a, "clone")
	n, err := a.AllocBuff()
	if err != nil {
		return nil, err
	}
	b.CloneInto(n)
	return n, nil
}

// CloneInto makes n, an unused header from AllocBuff, a clone of b. For
// allocators that fetch headers themselves; see Clone. The caller keeps
// ownership of b and owns n, which it must Free or pass on to a function that
// takes ownership.
func (b *Buff) CloneInto(n *Buff) {
	b.checkClonable()
	if n.state != stateFree {
		panic("skb: clone into a buffer in use")
	}
	atomic.AddInt32(&b.shinfo.dataref, 1)
	b.markCloned()
	if b.shinfo.fragList != nil {
		markShared(b.shinfo.fragList)
	}
	n.m = b.m
	n.cb = b.cb
	n.next = nil
	n.head = b.head
	n.data, n.tail, n.end = b.data, b.tail, b.end
	n.setShared(b.shinfo)
	n.state = stateCloned
}

// markCloned marks b cloned, writing its header only where that changes
// it: a frag list member (markShared) is cloned by the clones of its
// holder from their own goroutines, which then only read it.
func (b *Buff) markCloned() {
	if b.state != stateCloned {
		b.state = stateCloned
	}
	if b.shClean {
		b.shClean = false
	}
}

// checkNotDying panics when b is inside its data's destructor, where its
// data must not be reallocated: the block is on its way back, and a new
// one (or the old one moved under it) would be recycled with it. Every
// reallocation (ExpandHead, and dropData for the copying ones) checks.
func (b *Buff) checkNotDying() {
	if b.state == stateDying {
		panic("skb: reallocation of " + b.describe() + " inside its data's destructor")
	}
}

// checkClonable panics unless b may be cloned: live, and not inside its
// data's destructor (whose block is going back).
func (b *Buff) checkClonable() {
	switch b.state {
	case stateFree:
		panic("skb: use after free: clone of a freed " + b.describe())
	case stateDying:
		panic("skb: clone of " + b.describe() + " inside its data's destructor")
	}
}

// markShared marks every member of the frag list first, and of their own
// frag lists, cloned, as the buffer holding the list is being cloned: the
// clones share the members through the shared info, and a clone that
// reallocates its head clones each member (cloneList) from whatever
// goroutine owns it. Marked here, by the one owner of the list's holder
// before any clone of it exists, the members' states are only read after.
// A member already marked is not written again, so that cloning the holder
// once more, while other clones are in use, writes nothing they read.
func markShared(first *Buff) {
	for c := first; c != nil; c = c.next {
		c.markCloned()
		if c.shinfo.fragList != nil {
			markShared(c.shinfo.fragList)
		}
	}
}

// Copy returns a private, linear copy of b: the same headroom and tailroom
// (Tailroom: none for a nonlinear b, whose bytes past its linear data are its
// frags'), the headroom bytes too, all data in the linear part, and b's
// metadata (skb_copy, which keeps the old block's size for a nonlinear skb
// too; here a nonlinear packet of a few KiB in a large block would then need
// a block larger than any). The caller keeps ownership of b, owns the
// returned buffer and must Free it or pass it on to a function that takes
// ownership. Copy returns the allocator's error (ErrTooBig when no block is
// large enough); nothing is allocated then.
func (b *Buff) Copy(a Allocator) (*Buff, error) {
	b.checkLive()
	return b.CopyExpand(a, b.Headroom(), b.Tailroom())
}

// CopyExpand is Copy into a buffer with the given headroom and tailroom
// (skb_copy_expand). Header offsets and csum_start move with the data, so they
// point at the same bytes whatever the new headroom; a header pulled further
// than the new headroom reaches (its bytes not copied) is unset in the copy,
// and CHECKSUM_PARTIAL whose csum_start lies there becomes CHECKSUM_NONE. Ownership and errors as for Copy
// (ErrTooBig too when headroom+Len()+tailroom is more than any block holds,
// however large the sizes); it panics on negative sizes.
func (b *Buff) CopyExpand(a Allocator, headroom, tailroom int) (*Buff, error) {
	b.checkLive()
	if headroom < 0 || tailroom < 0 {
		panic(fmt.Sprintf("skb: copy with headroom %d tailroom %d", headroom, tailroom))
	}
	needAllocator(a, "copy")
	size, ok := blockSize(headroom, int(b.m.len), tailroom)
	if !ok {
		return nil, ErrTooBig
	}
	s, err := a.AllocShared(size)
	if err != nil {
		return nil, err
	}
	n, err := a.AllocBuff()
	if err != nil {
		a.RecycleShared(s)
		return nil, err
	}
	n.Build(s, headroom)
	hc := min(headroom, int(b.data))
	copy(s.mem[headroom-hc:headroom], b.head[int(b.data)-hc:b.data])
	b.copyBits(0, n.Put(int(b.m.len)))
	copyHeader(n, b, headroom-int(b.data))
	copyGSO(s, b.shinfo)
	n.shClean = false
	return n, nil
}

// PskbCopy returns a buffer with a private copy of b's linear data (same
// headroom, no tailroom beyond what the allocator rounds up to) that shares b's
// page frags and clones its frag list members (pskb_copy). As pskb_copy, it
// does not copy the headroom's bytes: a header already pulled into it (its
// offset before the data) reads the new block's bytes there; Copy and
// CopyExpand copy them. Ownership and errors as for Copy.
func (b *Buff) PskbCopy(a Allocator) (*Buff, error) {
	b.checkLive()
	needAllocator(a, "pskb copy")
	hr, hl := int(b.data), b.HeadLen()
	s, err := a.AllocShared(hr + hl)
	if err != nil {
		return nil, err
	}
	n, err := a.AllocBuff()
	if err != nil {
		a.RecycleShared(s)
		return nil, err
	}
	n.Build(s, hr)
	copy(n.Put(hl), b.Data())
	bs := b.shinfo
	if bs.fragList != nil {
		list, err := cloneList(a, bs.fragList)
		if err != nil {
			n.FreeTo(a)
			return nil, err
		}
		s.fragList = list
	}
	nr := int(bs.hot.nrFrags)
	for i := range nr {
		bs.frags[i].page.Get()
	}
	copy(s.frags[:nr], bs.frags[:nr])
	s.hot.nrFrags = bs.hot.nrFrags
	if s.hasExtra() {
		n.markExtra()
	}
	copyHeader(n, b, 0)
	n.m.len, n.m.dataLen = b.m.len, b.m.dataLen
	copyGSO(s, bs)
	n.shClean = false
	return n, nil
}

// Unshare gives b a private, linear copy of its data when the data is shared
// (skb_unshare); it does nothing otherwise. Unlike the kernel's, it keeps b
// itself: the caller's pointer stays valid and b keeps its metadata, headroom
// and tailroom (Tailroom, as Copy: none when b is nonlinear). On error
// (ErrTooBig when no block holds headroom, Len and tailroom; the allocator's
// exhaustion error) b is unchanged and still the caller's. Unshare does not
// take ownership of b.
func (b *Buff) Unshare(a Allocator) error {
	b.checkLive()
	if !b.Cloned() {
		return nil
	}
	return b.relinearize(a, int(b.data), b.Tailroom())
}

// relinearize moves all of b's data into a new private linear block with the
// given headroom and tailroom, and drops b's reference on the old block.
func (b *Buff) relinearize(a Allocator, headroom, tailroom int) error {
	needAllocator(a, "unshare")
	n := int(b.m.len)
	size, ok := blockSize(headroom, n, tailroom)
	if !ok {
		return ErrTooBig
	}
	s, err := a.AllocShared(size)
	if err != nil {
		return err
	}
	hc := min(headroom, int(b.data))
	copy(s.mem[headroom-hc:headroom], b.head[int(b.data)-hc:b.data])
	b.copyBits(0, s.mem[headroom:headroom+n])
	copyGSO(s, b.shinfo)
	b.dropData(a)
	delta := headroom - int(b.data)
	b.head = s.mem
	b.data = uint32(headroom)
	b.tail = uint32(headroom + n)
	b.end = uint32(len(s.mem))
	b.setShared(s)
	b.m.dataLen = 0
	b.state = stateLive
	if s.home != b.home {
		b.state = stateLiveExtra
	}
	shiftHeaders(&b.m, delta)
	return nil
}

// dropData drops b's reference on its data block, releasing it to a if it was
// the last; b's header stays live and must be given new data.
func (b *Buff) dropData(a Allocator) {
	b.checkNotDying()
	s := b.shinfo
	if b.state == stateCloned && atomic.AddInt32(&s.dataref, -1) != 0 {
		return
	}
	if s.hot.nrFrags != 0 || s.fragList != nil || s.destructor != nil {
		releaseShared(b, s, a)
	}
	a.RecycleShared(s)
}

// CowHead makes b's linear data private and gives it at least headroom bytes
// of headroom, reallocating the head only when the data is shared or the
// headroom is short (skb_cow_head). It reallocates as ExpandHead does, with
// the extra rounded up to 64 bytes (the page frags stay shared), except for a
// linear buffer that is shared (Cloned) or whose block cannot grow by the
// extra, and a nonlinear one whose head cannot grow by the extra (already
// in the largest class, after a PskbMayPull, say): that one is copied as
// CopyExpand copies
// (frags and frag list too, into linear data), into the smallest block
// holding its data behind max(headroom, 128 bytes or its headroom if less,
// the bytes of headers pulled in front of its data), the rest of that block
// its tailroom. So a clone of a received GRO train, whose head is the whole
// 68 KiB train with the segments before it as its headroom, costs a copy of
// its own bytes, not of the train, and a buffer of the largest class with
// short headroom can still get more (the kernel's skb_cow_head would copy
// the whole head into a larger one). Header offsets and csum_start move with
// the data. It returns the allocator's error, or ErrTooBig when no block can
// hold the headroom asked for and the data; on error b is unchanged and still
// the caller's. CowHead does not take ownership of b. It panics on a negative
// headroom.
func (b *Buff) CowHead(a Allocator, headroom int) error {
	b.checkLive()
	if headroom < 0 {
		panic(fmt.Sprintf("skb: cow head with headroom %d: %s", headroom, b.geometry()))
	}
	delta := 0
	if headroom > int(b.data) {
		if headroom > maxBlock-netSKBPad {
			return ErrTooBig
		}
		delta = (headroom - int(b.data) + netSKBPad - 1) &^ (netSKBPad - 1)
	}
	cloned := b.Cloned()
	if delta == 0 && !cloned {
		return nil
	}
	if b.IsNonlinear() {
		if err := b.ExpandHead(a, delta, 0); !errors.Is(err, ErrTooBig) {
			return err
		}
		// A head in the largest class cannot grow: the packet is copied
		// whole into a block that fits it, below.
	} else if !cloned {
		if _, ok := blockSize(delta, int(b.end), 0); ok {
			if err := b.ExpandHead(a, delta, 0); !errors.Is(err, ErrTooBig) {
				return err
			}
		}
	}
	hr := b.cowHeadroom(headroom)
	if cloned {
		return b.relinearize(a, hr, 0)
	}
	// b's own block: its destructor moves with the data, as ExpandHead
	// moves it, rather than run as the old block is released.
	old := b.shinfo
	d := old.destructor
	old.destructor = nil
	if err := b.relinearize(a, hr, 0); err != nil {
		old.destructor = d
		return err
	}
	if d != nil {
		b.shinfo.destructor = d
		b.markExtra()
	}
	return nil
}

// cowHeadroom is the headroom CowHead's copy of b's linear data gets: at
// least headroom bytes, and b's headroom up to DefaultHeadroom bytes, and
// the bytes in front of the data that set header offsets (and csum_start)
// point at, which relinearize copies with it.
func (b *Buff) cowHeadroom(headroom int) int {
	hr := max(headroom, min(int(b.data), DefaultHeadroom))
	lowest := int(b.data)
	for _, h := range [...]uint32{b.m.macHeader, b.m.netHeader, b.m.transHeader} {
		if h != 0 {
			lowest = min(lowest, int(h)-1) // stored as the offset plus one (setHeader)
		}
	}
	if b.m.ipSummed == ChecksumPartial {
		lowest = min(lowest, int(b.m.csumStart))
	}
	return max(hr, int(b.data)-lowest)
}

// ExpandHead moves b to a new private data block nhead bytes longer at the
// front and ntail bytes longer at the end, copying everything from head to
// tail; frags stay where they are (shared pages take a reference) and a shared
// frag list is cloned (pskb_expand_head). Header offsets and csum_start move
// with the data. It returns the allocator's error, or ErrTooBig when no block
// holds nhead+End()+ntail bytes (however large the sizes); on error b is
// unchanged and still the caller's. ExpandHead does not take ownership of b.
// It panics on negative sizes.
func (b *Buff) ExpandHead(a Allocator, nhead, ntail int) error {
	b.checkLive()
	b.checkNotDying()
	if nhead < 0 || ntail < 0 {
		panic(fmt.Sprintf("skb: expand head by %d and tail by %d: %s", nhead, ntail, b.geometry()))
	}
	needAllocator(a, "expand head")
	size, ok := blockSize(nhead, int(b.end), ntail)
	if !ok {
		return ErrTooBig
	}
	s, err := a.AllocShared(size)
	if err != nil {
		return err
	}
	old := b.shinfo
	copy(s.mem[nhead:], b.head[:b.tail])
	nr := int(old.hot.nrFrags)
	if b.Cloned() {
		if old.fragList != nil {
			list, err := cloneList(a, old.fragList)
			if err != nil {
				a.RecycleShared(s)
				return err
			}
			s.fragList = list
		}
		for i := range nr {
			old.frags[i].page.Get()
		}
		s.hot = old.hot
		copy(s.frags[:nr], old.frags[:nr])
		if atomic.AddInt32(&old.dataref, -1) == 0 {
			releaseShared(b, old, a)
			a.RecycleShared(old)
		}
	} else {
		s.hot = old.hot
		copy(s.frags[:nr], old.frags[:nr])
		s.fragList, s.destructor = old.fragList, old.destructor
		clear(old.frags[:nr])
		old.hot.nrFrags, old.fragList, old.destructor = 0, nil, nil
		a.RecycleShared(old)
	}
	b.head = s.mem
	b.setShared(s)
	b.data += uint32(nhead)
	b.tail += uint32(nhead)
	b.end = uint32(len(s.mem))
	b.state = stateLive
	if s.hasExtra() || s.home != b.home {
		b.state = stateLiveExtra
	}
	shiftHeaders(&b.m, nhead)
	return nil
}

// Linearize moves all paged data into the linear part, reallocating the head
// when the tailroom is short or the data is shared (skb_linearize). On error b
// holds the same bytes and is still the caller's, though its linear data may
// have moved to a block of its own (the reallocation comes first, as in the
// kernel). Linearize does not take ownership of b.
func (b *Buff) Linearize(a Allocator) error {
	b.checkLive()
	if b.m.dataLen == 0 {
		return nil
	}
	return b.pullTail(a, int(b.m.dataLen))
}

// PskbMayPull makes sure the first n bytes of b are in the linear data,
// moving them out of the frags and frag list when they are not
// (pskb_may_pull). It returns ErrRange when b is shorter than n (b is then
// unchanged), or the allocator's error (b then holds the same bytes, though
// its linear data may have moved to a block of its own, as Linearize's
// may). It panics on a negative n. It does not take ownership of b.
func (b *Buff) PskbMayPull(a Allocator, n int) error {
	b.checkLive()
	if n < 0 {
		panic(fmt.Sprintf("skb: pskb_may_pull of %d bytes: %s", n, b.geometry()))
	}
	hl := b.HeadLen()
	if n <= hl {
		return nil
	}
	if n > int(b.m.len) {
		return ErrRange
	}
	return b.pullTail(a, n-hl)
}

// pullTail moves delta bytes from the paged part to the end of the linear
// data (__pskb_pull_tail).
func (b *Buff) pullTail(a Allocator, delta int) error {
	eat := int(b.tail) + delta - int(b.end)
	if eat > 0 || b.Cloned() {
		grow := 0
		if eat > 0 {
			grow = eat + pullTailSlack
		}
		err := b.ExpandHead(a, 0, grow)
		if errors.Is(err, ErrTooBig) && eat > 0 {
			// The slack is a convenience: without it the bytes may
			// still fit the largest class.
			err = b.ExpandHead(a, 0, eat)
		}
		if err != nil {
			return err
		}
	}
	s := b.shinfo
	// A frag list member that gives only part of its bytes must have that part
	// in its linear data before anything is copied, so that a failure leaves
	// the buffer's contents as they were.
	if need := delta - b.pagedLen(); need > 0 {
		for c := s.fragList; c != nil; c = c.next {
			if need < int(c.m.len) {
				if err := c.PskbMayPull(a, need); err != nil {
					return err
				}
				break
			}
			need -= int(c.m.len)
		}
	}
	hl := b.HeadLen()
	b.copyBits(hl, b.head[b.tail:int(b.tail)+delta])
	rem := uint32(delta)
	k := 0
	for i := range int(s.hot.nrFrags) {
		f := s.frags[i]
		if rem >= f.size {
			rem -= f.size
			f.page.Put()
			continue
		}
		f.off += rem
		f.size -= rem
		rem = 0
		s.frags[k] = f
		k++
	}
	clear(s.frags[k:s.hot.nrFrags])
	s.hot.nrFrags = uint8(k)
	b.shClean = false
	for rem > 0 {
		c := s.fragList
		if c.m.len <= rem {
			rem -= c.m.len
			s.fragList = c.next
			c.next = nil
			c.FreeTo(a)
			continue
		}
		c.Pull(int(rem))
		rem = 0
	}
	b.tail += uint32(delta)
	b.m.dataLen -= uint32(delta)
	return nil
}

// PskbTrim cuts b down to n bytes, dropping linear data, frags and frag list
// members past n; it does nothing when b is not longer (pskb_trim). A buffer
// whose shared info is shared gets a private one first. It returns the
// allocator's error when that fails, with b's contents unchanged. It does not take ownership of b;
// it panics if n is negative.
func (b *Buff) PskbTrim(a Allocator, n int) error {
	b.checkLive()
	if n < 0 {
		panic(misuse{b, opTrim, n, 0})
	}
	if n >= int(b.m.len) {
		return nil
	}
	if b.m.dataLen == 0 {
		b.Trim(n)
		return nil
	}
	if b.Cloned() {
		if err := b.ExpandHead(a, 0, 0); err != nil {
			return err
		}
	}
	s := b.shinfo
	hl := b.HeadLen()
	keep := 0 // bytes of the paged part to keep
	if n > hl {
		keep = n - hl
	}
	// Trim the one frag list member that keeps part of its bytes first: it is
	// the only step that can fail, and b must be unchanged when it does.
	if r := keep - b.pagedLen(); r > 0 {
		for c := s.fragList; c != nil; c = c.next {
			if r < int(c.m.len) {
				if err := c.PskbTrim(a, r); err != nil {
					return err
				}
				break
			}
			r -= int(c.m.len)
		}
	}
	if n < hl {
		b.tail = b.data + uint32(n)
	}
	rem := uint32(keep)
	k := 0
	for i := range int(s.hot.nrFrags) {
		f := s.frags[i]
		if rem == 0 {
			f.page.Put()
			continue
		}
		if f.size > rem {
			f.size = rem
		}
		rem -= f.size
		s.frags[k] = f
		k++
	}
	clear(s.frags[k:s.hot.nrFrags])
	s.hot.nrFrags = uint8(k)
	b.shClean = false
	p := &s.fragList
	for c := s.fragList; c != nil; {
		next := c.next
		if rem == 0 {
			*p = nil
			c.next = nil
			c.FreeTo(a)
		} else {
			rem -= c.m.len
			p = &c.next
		}
		c = next
	}
	b.m.len = uint32(n)
	b.m.dataLen = uint32(keep)
	return nil
}

// CopyBits copies len(to) bytes of b starting off bytes after the start of the
// data into to, gathering them from the linear data, the frags and the frag
// list (skb_copy_bits). off may be negative to reach into the headroom. It
// returns ErrRange when the range is not inside the buffer. It does not take
// ownership of b and does not keep to.
func (b *Buff) CopyBits(off int, to []byte) error {
	b.checkLive()
	if off < -int(b.data) || off > int(b.m.len)-len(to) {
		return ErrRange
	}
	b.copyBits(off, to)
	return nil
}

// copyBits is CopyBits without the range check.
func (b *Buff) copyBits(off int, to []byte) {
	hl := int(b.tail - b.data)
	if off < hl {
		c := copy(to, b.head[int(b.data)+off:b.tail])
		to = to[c:]
		off += c
	}
	if len(to) == 0 {
		return
	}
	off -= hl
	s := b.shinfo
	for i := range int(s.hot.nrFrags) {
		f := s.frags[i]
		if off < int(f.size) {
			c := copy(to, f.Bytes()[off:])
			to = to[c:]
			if len(to) == 0 {
				return
			}
			off = 0
			continue
		}
		off -= int(f.size)
	}
	for c := s.fragList; c != nil; c = c.next {
		if off < int(c.m.len) {
			k := min(len(to), int(c.m.len)-off)
			c.copyBits(off, to[:k])
			to = to[k:]
			if len(to) == 0 {
				return
			}
			off = 0
			continue
		}
		off -= int(c.m.len)
	}
}

// cloneList clones every buffer of a frag list, in order.
func cloneList(a Allocator, first *Buff) (*Buff, error) {
	var head *Buff
	p := &head
	for c := first; c != nil; c = c.next {
		n, err := c.Clone(a)
		if err != nil {
			for h := head; h != nil; {
				next := h.next
				h.next = nil
				h.FreeTo(a)
				h = next
			}
			return nil, err
		}
		*p = n
		p = &n.next
	}
	return head, nil
}

// CopyHeader copies old's metadata into b (skb_copy_header): protocol,
// priority, mark, hash, queue mapping, timestamp, checksum state, control
// block and the GSO parameters, and the header offsets and csum_start moved by the difference
// in headroom, so that they point at the same bytes when b's data is a copy
// of old's (one that would fall before b's head is unset, as in
// CopyExpand). b keeps its lengths and geometry. It panics if b's shared info is
// shared (the GSO fields live there). It takes ownership of neither buffer.
func (b *Buff) CopyHeader(old *Buff) {
	if b == nil || old == nil {
		panic(fmt.Sprintf("skb: copy header from %p into %p: a nil *Buff", old, b))
	}
	b.checkLive()
	old.checkLive()
	b.writableShinfo("copy header")
	copyHeader(b, old, int(b.data)-int(old.data))
	copyGSO(b.shinfo, old.shinfo)
	b.shClean = false
}

// copyHeader copies old's metadata into n (skb_copy_header), keeping n's
// lengths, and moves the header offsets by delta bytes.
func copyHeader(n, old *Buff, delta int) {
	l, dl := n.m.len, n.m.dataLen
	n.m = old.m
	n.cb = old.cb
	n.m.len, n.m.dataLen = l, dl
	shiftHeaders(&n.m, delta)
}

// shiftHeaders moves the set header offsets and csum_start by delta bytes
// (skb_headers_offset_update). An offset that would fall before the new
// head, a header pulled further than a copy's headroom reaches, whose
// bytes the copy does not have, is unset; so is CHECKSUM_PARTIAL whose
// csum_start would (the copy cannot finish that checksum), which becomes
// CHECKSUM_NONE. The kernel's u16 offsets would wrap there instead.
func shiftHeaders(m *meta, delta int) {
	if delta == 0 {
		return
	}
	shift := func(h *uint32) {
		if *h == 0 {
			return
		}
		if p := int(*h) + delta; p >= 1 {
			*h = uint32(p)
		} else {
			*h = 0
		}
	}
	shift(&m.macHeader)
	shift(&m.netHeader)
	shift(&m.transHeader)
	if m.ipSummed == ChecksumPartial {
		if p := int(m.csumStart) + delta; p >= 0 {
			m.csumStart = uint32(p)
		} else {
			m.ipSummed, m.csumStart, m.csumOffset = ChecksumNone, 0, 0
		}
	}
}

// copyGSO copies the GSO parameters from old to s.
func copyGSO(s, old *Shared) {
	s.hot.gsoSize, s.hot.gsoSegs, s.hot.gsoType = old.hot.gsoSize, old.hot.gsoSegs, old.hot.gsoType
}
