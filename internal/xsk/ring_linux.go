package xsk

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// NeedWakeup is the XDP_RING_NEED_WAKEUP bit of a ring's flags word: the
// kernel asks to be woken (sendto for tx, recvfrom or poll for fill) before it
// looks at the ring again.
const NeedWakeup = unix.XDP_RING_NEED_WAKEUP

// ring is what the four rings share: the mapped memory and the three shared
// words in it.
type ring struct {
	producer *uint32 // written by the producing side, read with acquire by the other
	consumer *uint32 // written by the consuming side, read with acquire by the other
	flags    *uint32 // written by the kernel (XDP_RING_NEED_WAKEUP)
	mask     uint32  // size-1; size is a power of two
	size     uint32
	mem      []byte // the mmap'ed region, unmapped by Socket.Close
}

// Size returns the number of entries.
func (r *ring) Size() uint32 { return r.size }

// NeedWakeup reports whether the kernel set XDP_RING_NEED_WAKEUP in the
// ring's flags: the caller must wake it (sendto for tx, recvfrom or poll(2)
// for fill) for it to look at the ring. Always false on a ring of a socket
// bound without XDP_USE_NEED_WAKEUP.
func (r *ring) NeedWakeup() bool { return atomic.LoadUint32(r.flags)&NeedWakeup != 0 }

// ProdRing is a ring user space produces into: fill or tx. prod is the
// private producer, published by Submit; cons caches the kernel's consumer.
// One goroutine at a time.
type ProdRing struct {
	ring
	prod uint32 // next entry to write; published to *producer by Submit
	cons uint32 // kernel's consumer as last loaded
}

// Free returns how many entries can be written now, up to want: it loads the
// kernel's consumer (acquire) only when the cached value shows fewer than want
// free, as xskq_prod_nb_free does.
func (r *ProdRing) Free(want uint32) uint32 {
	free := r.size - (r.prod - r.cons)
	if free >= want {
		return want
	}
	r.cons = atomic.LoadUint32(r.consumer)
	free = r.size - (r.prod - r.cons)
	return min(free, want)
}

// Index returns the slot of the k-th entry after the private producer.
func (r *ProdRing) Index(k uint32) uint32 { return (r.prod + k) & r.mask }

// Produce advances the private producer by n entries, written at Index(0)
// to Index(n-1). The kernel sees them after Submit.
func (r *ProdRing) Produce(n uint32) { r.prod += n }

// Submit publishes the private producer with a release store: entries
// written before it are visible to the kernel when it sees the new index.
func (r *ProdRing) Submit() { atomic.StoreUint32(r.producer, r.prod) }

// Producer returns the private producer: the free-running index of the next
// entry to be written.
func (r *ProdRing) Producer() uint32 { return r.prod }

// Consumer loads the kernel's consumer (acquire) and returns it: entries
// before it have been read by the kernel.
func (r *ProdRing) Consumer() uint32 {
	r.cons = atomic.LoadUint32(r.consumer)
	return r.cons
}

// Pending returns how many entries were produced and not yet taken by the
// kernel, as of the last load of its consumer.
func (r *ProdRing) Pending() uint32 { return r.prod - r.cons }

// ConsRing is a ring user space consumes from: completion or rx. cons is the
// private consumer, published by Release; prod caches the kernel's producer.
// One goroutine at a time.
type ConsRing struct {
	ring
	cons uint32 // next entry to read; published to *consumer by Release
	prod uint32 // kernel's producer as last loaded
}

// Peek returns how many entries are ready to read, up to max: it loads the
// kernel's producer (acquire) when the cached value shows none ready, as
// xskq_cons_nb_entries does, so entries at Index(0) to Index(n-1) are
// visible once Peek has returned n.
func (r *ConsRing) Peek(max uint32) uint32 {
	n := r.prod - r.cons
	if n == 0 {
		r.prod = atomic.LoadUint32(r.producer)
		n = r.prod - r.cons
	}
	return min(n, max)
}

// Pending returns how many entries the kernel has produced past the
// private consumer, loading its producer now (acquire) whatever Peek last
// saw; it changes nothing.
func (r *ConsRing) Pending() uint32 { return atomic.LoadUint32(r.producer) - r.cons }

// Index returns the slot of the k-th entry after the private consumer.
func (r *ConsRing) Index(k uint32) uint32 { return (r.cons + k) & r.mask }

// Consume advances the private consumer by n entries. The kernel may reuse
// their slots after Release.
func (r *ConsRing) Consume(n uint32) { r.cons += n }

// Release publishes the private consumer with a release store: the entries
// before it were read and their slots may be written again.
func (r *ConsRing) Release() { atomic.StoreUint32(r.consumer, r.cons) }

// FillRing is the fill ring: user space gives the kernel UMEM frames to
// receive into, by address.
type FillRing struct {
	ProdRing
	Addrs []uint64 // the entries, Size() of them, in the mapped memory
}

// CompRing is the completion ring: the kernel returns the addresses of
// transmitted frames, in the order it completed them.
type CompRing struct {
	ConsRing
	Addrs []uint64 // the entries, Size() of them, in the mapped memory
}

// RxRing is the rx ring: the kernel hands over received frames.
type RxRing struct {
	ConsRing
	Descs []unix.XDPDesc // the entries, Size() of them, in the mapped memory
}

// TxRing is the tx ring: user space hands frames to the kernel to send.
type TxRing struct {
	ProdRing
	Descs []unix.XDPDesc // the entries, Size() of them, in the mapped memory
}
