package netdevtest_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// knobs select how a fake device behaves: legal variations of the contract
// that the suite must accept, and bugs it must catch.
type knobs struct {
	// Legal.
	eager        bool // ring the doorbell on the Xmit that fills the ring, not the next
	lag          bool // a doorbell completes the previous doorbell's slots (the ring can stay full)
	flushOnClose bool // Close sends what is queued instead of dropping it
	lossEvery    int  // lose every n-th packet (a Lossy path)

	// Bugs.
	noErrorDoorbell bool // an Xmit that fails does not ring for what is queued
	leakOnError     bool // an Xmit that fails does not free the packet
	dup             bool // now and then deliver a packet twice
	ignoreBudget    bool // Poll hands over everything ready
	noWake          bool // the doorbell does not wake a waiting Wait
	badTxBytes      bool // tx_bytes counts one byte too many per doorbell
	cloneOnXmit     bool // Xmit queues a clone of the packet and frees the packet
}

// fakeLink is one direction of a fake pair: the packets the doorbell moved,
// waiting for the peer's Poll. The buffers themselves cross, as on veth.
type fakeLink struct {
	mu     sync.Mutex
	q      []*skb.Buff
	closed bool
	sig    chan struct{}
}

// fake is a second, deliberately simple implementation of netdev.Device,
// unlike memring in its policies, so that the suite is checked against more
// than one reading of the contract.
type fake struct {
	k       knobs
	p       *pool.Pool
	cache   *pool.Cache
	hr, thr int
	maxLen  int
	ring    int

	mu       sync.Mutex // the owner's calls against Close
	closed   bool
	polling  bool // Poll runs: a nested one panics
	done     chan struct{}
	ctr      netdev.Counters
	txq      []*skb.Buff
	inflight int // slots sent but not yet completed (knob lag)
	moved    int // packets moved, for lossEvery and dup
	out, in  *fakeLink
	batch    []*skb.Buff
	timer    *time.Timer
}

func newFakePair(cfg netdev.Config, k knobs) (*fake, *fake) {
	l1 := &fakeLink{sig: make(chan struct{}, 1)}
	l2 := &fakeLink{sig: make(chan struct{}, 1)}
	mk := func(out, in *fakeLink) *fake {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return &fake{k: k, p: cfg.Pool, cache: cfg.Pool.NewCache(), hr: cfg.HeadroomBytes(), thr: cfg.CopybreakThreshold(),
			maxLen: 1500, ring: cfg.BatchSize(), done: make(chan struct{}), out: out, in: in, timer: t}
	}
	return mk(l1, l2), mk(l2, l1)
}

var (
	errFakeClosed = fmt.Errorf("fake: %w", netdev.ErrClosed)
	errFakeBig    = fmt.Errorf("fake: %w", netdev.ErrTooBig)
	errFakeFull   = fmt.Errorf("fake: %w", netdev.ErrQueueFull)
	errFakeTime   = fmt.Errorf("fake: %w", netdev.ErrTimeout)
)

func (f *fake) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("fake", b)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		b.Free()
		f.ctr.TxDrop(netdev.DropClosed, 1)
		return errFakeClosed
	}
	if b.Len() > f.maxLen {
		f.ctr.TxDrop(netdev.DropTooBig, 1)
		if !f.k.leakOnError {
			f.cache.Free(b)
		}
		if !f.k.noErrorDoorbell {
			f.doorbell()
		}
		return errFakeBig
	}
	if len(f.txq)+f.inflight == f.ring {
		f.ctr.TxRingFull()
		f.doorbell()
		if len(f.txq)+f.inflight == f.ring {
			f.ctr.TxDrop(netdev.DropRingFull, 1)
			f.cache.Free(b)
			return errFakeFull
		}
	}
	if f.k.cloneOnXmit {
		c := f.cache.Clone(b)
		f.cache.Free(b)
		b = c
	}
	f.txq = append(f.txq, b)
	if !more || f.k.eager && len(f.txq)+f.inflight == f.ring {
		f.doorbell()
	}
	return nil
}

// doorbell moves the queued packets to the peer. f.mu held.
func (f *fake) doorbell() {
	done := f.inflight
	f.inflight = 0
	n := len(f.txq)
	if n == 0 && done == 0 {
		return
	}
	if f.k.lag {
		f.inflight = n
	}
	if n == 0 {
		return
	}
	bytes := 0
	l := f.out
	l.mu.Lock()
	for i, b := range f.txq {
		bytes += b.Len()
		f.moved++
		switch {
		case l.closed, f.k.lossEvery > 0 && f.moved%f.k.lossEvery == 0:
			f.cache.Free(b)
		default:
			if f.k.dup && f.moved%37 == 0 {
				if c, err := b.Copy(f.p); err == nil {
					l.q = append(l.q, c)
				}
			}
			l.q = append(l.q, b)
		}
		f.txq[i] = nil
	}
	l.mu.Unlock()
	f.txq = f.txq[:0]
	if f.k.badTxBytes {
		bytes++
	}
	f.ctr.TxDoorbell(n, bytes)
	select {
	case l.sig <- struct{}{}:
	default:
	}
}

func (f *fake) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errFakeClosed
	}
	f.doorbell()
	return nil
}

func (f *fake) TxAvail() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0
	}
	return f.ring - len(f.txq) - f.inflight
}

func (f *fake) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("fake: Poll with a nil handler")
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return 0, errFakeClosed
	}
	if f.polling {
		f.mu.Unlock()
		netdev.NestedPoll("fake")
	}
	f.polling = true
	defer func() {
		// A handler that panicked leaves the rest of the batch: it goes
		// back to the front of the link, for the next Poll.
		var rest []*skb.Buff
		for i, b := range f.batch {
			if b != nil {
				rest = append(rest, b)
				f.batch[i] = nil
			}
		}
		if len(rest) > 0 {
			f.in.mu.Lock()
			f.in.q = append(rest, f.in.q...)
			f.in.mu.Unlock()
		}
		f.polling = false
	}()
	// The handler runs without f.mu, as it may Xmit or Close.
	f.mu.Unlock()
	l := f.in
	l.mu.Lock()
	k := min(max(budget, 0), len(l.q))
	if f.k.ignoreBudget {
		k = len(l.q)
	}
	f.batch = append(f.batch[:0], l.q[:k]...)
	l.q = l.q[:copy(l.q, l.q[k:])]
	l.mu.Unlock()
	for i, b := range f.batch {
		// The cache under f.mu, against a Close from another goroutine.
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			for _, b := range f.batch[i:] {
				b.Free()
			}
			f.ctr.RxDrop(netdev.DropClosed, len(f.batch)-i)
			clear(f.batch)
			return i, errFakeClosed
		}
		f.batch[i] = nil // b is this Poll's to free or hand over now
		n := b.Len()
		if n < f.thr {
			if c, err := b.CopyExpand(f.cache, f.hr, 0); err == nil {
				f.cache.Free(b)
				b = c
				f.ctr.RxCopybreak()
			}
		}
		if b.Headroom() < f.hr {
			if err := b.ExpandHead(f.cache, f.hr-b.Headroom(), 0); err != nil {
				f.cache.Free(b)
				f.mu.Unlock()
				f.ctr.RxDrop(netdev.DropNoBuffer, 1)
				continue
			}
		}
		f.mu.Unlock()
		f.ctr.RxPacket(n)
		h(b)
	}
	clear(f.batch)
	if f.isClosed() {
		return k, errFakeClosed
	}
	return k, nil
}

func (f *fake) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *fake) Wait(timeout time.Duration) error {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return errFakeClosed
	}
	sig := f.in.sig
	if f.k.noWake {
		sig = nil
	}
	var expired <-chan time.Time
	if timeout >= 0 {
		f.timer.Reset(timeout)
		defer f.timer.Stop()
		expired = f.timer.C
	}
	for {
		f.in.mu.Lock()
		ready := len(f.in.q) > 0
		f.in.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-sig:
		case <-f.done:
			return errFakeClosed
		case <-expired:
			return errFakeTime
		}
	}
}

func (f *fake) Cache() *pool.Cache  { return f.cache }
func (f *fake) Stats() netdev.Stats { return f.ctr.Snapshot() }

func (f *fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errFakeClosed
	}
	f.closed = true
	close(f.done)
	if f.k.flushOnClose {
		f.doorbell()
	}
	for _, b := range f.txq {
		b.Free()
	}
	f.ctr.TxDrop(netdev.DropClosed, len(f.txq))
	f.txq = nil
	l := f.in
	l.mu.Lock()
	l.closed = true
	for _, b := range l.q {
		b.Free()
	}
	f.ctr.RxDrop(netdev.DropClosed, len(l.q))
	l.q = nil
	l.mu.Unlock()
	f.cache.Close()
	return nil
}

// fakeFill and fakeSeq carry the suite's packets as bare payloads.
func fakeFill(b *skb.Buff, seq uint32, payload int) {
	p := b.Put(payload)
	binary.BigEndian.PutUint32(p, seq)
}

func fakeSeq(b *skb.Buff) (uint32, int, bool) {
	var h [4]byte
	if b.CopyBits(0, h[:]) != nil {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(h[:]), b.Len(), true
}
