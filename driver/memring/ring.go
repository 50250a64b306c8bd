package memring

import (
	"sync"
	"sync/atomic"

	"github.com/skbdev/skb/skb"
)

// cacheLine separates the fields one goroutine writes from those the other
// writes, so that the two sides of the ring do not share a cache line.
const cacheLine = 64

// rxDesc is one receive descriptor: a posted buffer, the window of its block
// the device may write (the DMA address and length a NIC would be given), and
// the length of the packet the device wrote there (the completion).
type rxDesc struct {
	b   *skb.Buff // written by the owner when posting
	dma []byte    // written by the owner when posting, written through by the device
	n   int       // written by the device when filling
}

// rxRing is the receive ring of one Device: a single-producer,
// single-consumer ring of power-of-two size shared by its owner and the
// peer's doorbell, which plays the NIC's DMA engine. Three free-running
// indices (slot = index & mask) split it:
//
//	[poll, fill)        filled: packets the device wrote, not yet polled (owner's)
//	[fill, post)        posted: empty buffers the device may fill (device's)
//	[post, poll+size)   free: slots the owner refills with fresh buffers (owner's)
//
// The owner publishes post with an atomic store after writing the slots it
// posted (release) and the device loads it before reading them (acquire);
// the device publishes fill after writing the packets and their lengths, and
// the owner loads it before reading them. Go's atomics are sequentially
// consistent, which gives both orders. Each side keeps a private copy of the
// other's index and reloads it only when its copy says the ring is empty, so
// that most operations touch no shared cache line.
type rxRing struct {
	// Owner side: written by the owner's goroutine only.
	post       atomic.Uint64 // published end of the posted slots
	posted     uint64        // end of the posted slots, published at the end of each Poll
	poll       uint64        // next filled slot to hand to Poll's handler
	cachedFill uint64        // the owner's last load of fill
	waiting    atomic.Bool   // the owner is (about to be) blocked in Wait
	_          [cacheLine]byte

	// Device side: written by the peer's doorbell only, with mu held.
	fill       atomic.Uint64 // published end of the filled slots
	cachedPost uint64        // the device's last load of post
	_          [cacheLine]byte

	// mu orders the peer's doorbell against the owner's Close: the doorbell
	// fills slots only while closed is false, and Close frees the posted
	// buffers only after setting it.
	mu     sync.Mutex
	closed bool

	mask   uint64
	slots  []rxDesc
	notify chan struct{} // one token: the doorbell wakes a waiting owner

	nobuf  atomic.Uint64 // packets the device dropped for want of a posted buffer
	closeD atomic.Uint64 // packets lost to Close: filled and never polled, or sent after it
}

func newRxRing(size int) *rxRing {
	return &rxRing{
		mask:   uint64(size - 1),
		slots:  make([]rxDesc, size),
		notify: make(chan struct{}, 1),
	}
}

func (r *rxRing) slot(i uint64) *rxDesc { return &r.slots[i&r.mask] }

// repost puts b, with the window dma of its block, in the next free slot.
// Owner only; the slot becomes visible to the device at the next publish.
func (r *rxRing) repost(b *skb.Buff, dma []byte) {
	s := r.slot(r.posted)
	s.b, s.dma, s.n = b, dma, 0
	r.posted++
}

// publish makes the slots posted since the last publish visible to the
// device (release). Owner only.
func (r *rxRing) publish() {
	if r.post.Load() != r.posted {
		r.post.Store(r.posted)
	}
}

// ready reports whether a filled slot is waiting for Poll, loading fill
// (acquire) when the owner's copy says there is none. Owner only.
func (r *rxRing) ready() bool {
	if r.poll != r.cachedFill {
		return true
	}
	r.cachedFill = r.fill.Load()
	return r.poll != r.cachedFill
}

// wake signals the owner when it is blocked in Wait. Called by the device
// after publishing fill; with the owner's store to waiting before its load of
// fill, one of the two sees the other (sequentially consistent atomics), so a
// wakeup is never lost.
func (r *rxRing) wake() {
	if r.waiting.Load() {
		select {
		case r.notify <- struct{}{}:
		default:
		}
	}
}
