package memring

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Defaults of Config.
const (
	// DefaultRingSize is the number of descriptors in each receive ring:
	// four transmit batches (netdev.DefaultBatch), so that a receiver one
	// batch behind drops nothing.
	DefaultRingSize = 256
	// DefaultRxBufSize is the room of each receive buffer after its
	// headroom, in bytes: an Ethernet frame without FCS (ETH_FRAME_LEN,
	// include/uapi/linux/if_ether.h). With the default 128 bytes of headroom
	// it fits the pool's 2048-byte class.
	DefaultRxBufSize = 1514
	// maxRingSize bounds RingSize: 64 Ki descriptors.
	maxRingSize = 1 << 16
)

// Config configures a pair of memring devices. The zero Config is usable.
type Config struct {
	// Config holds the settings every driver takes. Pool nil makes NewPair
	// create a pool for the pair, closed when both devices are. Batch is the
	// depth of each transmit ring; Headroom is reserved in every receive
	// buffer, and never less than the pool's own headroom (NoHeadroom, or
	// a smaller value, leaves the pool's); Copybreak applies to Poll.
	netdev.Config

	// RingSize is the number of descriptors in each receive ring: how many
	// empty buffers each device keeps posted for its peer to fill. A power of
	// two, at most 65536; 0 means DefaultRingSize.
	RingSize int

	// RxBufSize is the room of each receive buffer after its headroom, in
	// bytes: the largest packet the pair carries (Xmit refuses longer ones
	// with netdev.ErrTooBig). 0 means DefaultRxBufSize.
	RxBufSize int

	// DoorbellCost is how long each doorbell busy-waits before the device
	// processes the transmit ring, simulating the uncached MMIO write to a
	// NIC's doorbell register or the system call that kicks a socket or an
	// AF_XDP ring (a sendto kick of AF_XDP took about 300 ns, a bare system
	// call about 100 ns, on the machines skb was first measured on). It is
	// paid once per doorbell however many packets it sends, which is what
	// batching with xmit_more saves (seed 002). The wait is at least
	// DoorbellCost; reading the clock adds a few tens of nanoseconds. 0
	// makes doorbells free.
	DoorbellCost time.Duration

	// CloneOnXmit makes Xmit queue a clone of the caller's buffer and free
	// the original, as the rxe driver did before seed 000 removed the
	// skb_clone from rxe_send: an ablation switch for measuring that seed.
	// Off, the default, the caller's buffer itself is transmitted.
	CloneOnXmit bool
}

// check validates cfg and fills in the defaults.
func (cfg *Config) check() error {
	if cfg.RingSize == 0 {
		cfg.RingSize = DefaultRingSize
	}
	if cfg.RxBufSize == 0 {
		cfg.RxBufSize = DefaultRxBufSize
	}
	switch {
	case cfg.RingSize < 1 || cfg.RingSize > maxRingSize || cfg.RingSize&(cfg.RingSize-1) != 0:
		return netdev.ConfigErrorf(ErrConfig, "ring size %d is not a power of two from 1 to %d", cfg.RingSize, maxRingSize)
	case cfg.RxBufSize < 0:
		return netdev.ConfigErrorf(ErrConfig, "receive buffer size %d: want 0 (the default, %d bytes) or more", cfg.RxBufSize, DefaultRxBufSize)
	case cfg.DoorbellCost < 0:
		return netdev.ConfigErrorf(ErrConfig, "doorbell cost %v: want 0 (free) or more", cfg.DoorbellCost)
	case cfg.Headroom < netdev.NoHeadroom:
		return netdev.ConfigErrorf(ErrConfig, "headroom %d: want 0 (the default), netdev.NoHeadroom or more", cfg.Headroom)
	}
	return nil
}

// Device is one end of a memring pair: a simulated NIC queue that implements
// netdev.Device. See the package documentation for the rings, and package
// netdev for the rules every method follows.
//
// A Device belongs to one goroutine (its owner): Xmit, Flush, TxAvail, Poll,
// Wait and the Cache are used from that goroutine only; the two devices of a
// pair may have different owners. Stats and Close are safe for concurrent
// use.
type Device struct {
	// state is bit 0: closing, plus twice the number of calls in progress
	// on the owner's goroutine (nested when a handler calls Xmit). Whoever
	// leaves it at exactly 1 (closing, idle) releases the device.
	state    atomic.Int32
	released atomic.Bool
	done     chan struct{} // closed by Close: wakes Wait
	polling  atomic.Bool   // Poll runs: a nested one (or another goroutine's) panics

	peer  *Device
	rx    *rxRing // filled by the peer's doorbell
	cache *pool.Cache
	ctr   netdev.Counters

	txq []*skb.Buff // the transmit ring: queued by Xmit, sent by the doorbell
	txn int

	rxBufSize int           // room of our receive buffers
	maxLen    int           // the peer's rxBufSize: the longest packet Xmit takes
	headroom  int           // headroom of received buffers
	extra     int           // headroom reserved beyond the pool's
	thr       int           // copybreak threshold, 0 when off
	cost      time.Duration // DoorbellCost
	clone     bool          // CloneOnXmit
	timer     *time.Timer   // Wait's, reused

	txClosed atomic.Uint64 // packets freed unsent by Close or given to Xmit after it
	shared   *pairShared
}

// pairShared is what the two devices of a pair share: the pool, closed with
// the second device when NewPair made it.
type pairShared struct {
	pool *pool.Pool
	own  bool
	refs atomic.Int32
}

func (s *pairShared) put() error {
	if s.refs.Add(-1) == 0 && s.own {
		if err := s.pool.Close(); err != nil {
			return fmt.Errorf("memring: close: %w", err)
		}
	}
	return nil
}

// NewPair returns two devices joined by their rings: what a transmits, b
// receives, and the other way round. Each gets a Cache of the pool and posts
// RingSize receive buffers from it. It returns an error wrapping ErrConfig
// for an invalid Config, or the pool's error (pool.ErrExhausted when a bounded
// pool cannot fill the rings). The caller owns both devices and must Close
// them.
func NewPair(cfg Config) (a, b *Device, err error) {
	if err := cfg.Config.Validate(); err != nil {
		return nil, nil, fmt.Errorf("memring: new pair: %w", netdev.ConfigError(ErrConfig, err))
	}
	if err := cfg.check(); err != nil {
		return nil, nil, fmt.Errorf("memring: new pair: %w", err)
	}
	sh := &pairShared{pool: cfg.Pool}
	if sh.pool == nil {
		p, err := pool.New(pool.Config{Name: "memring"})
		if err != nil {
			return nil, nil, fmt.Errorf("memring: new pair: %w", err)
		}
		sh.pool, sh.own = p, true
	}
	extra := max(0, cfg.HeadroomBytes()-sh.pool.Headroom())
	if need := cfg.RxBufSize + extra; need > sh.pool.MaxAlloc() {
		if sh.own {
			sh.pool.Close()
		}
		return nil, nil, fmt.Errorf("memring: new pair: %w", netdev.ConfigErrorf(ErrConfig, "receive buffers of %d bytes after %d bytes of headroom do not fit the pool's largest class (%d bytes after %d)",
			cfg.RxBufSize, cfg.HeadroomBytes(), sh.pool.MaxAlloc(), sh.pool.Headroom()))
	}
	sh.refs.Store(2)
	a, b = newDevice(cfg, sh, extra), newDevice(cfg, sh, extra)
	a.peer, b.peer = b, a
	a.maxLen, b.maxLen = b.rxBufSize, a.rxBufSize
	for _, d := range []*Device{a, b} {
		if err = d.fillRx(); err != nil {
			a.Close()
			b.Close()
			return nil, nil, fmt.Errorf("memring: new pair: post receive buffers: %w", err)
		}
	}
	return a, b, nil
}

func newDevice(cfg Config, sh *pairShared, extra int) *Device {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Device{
		done:      make(chan struct{}),
		rx:        newRxRing(cfg.RingSize),
		cache:     sh.pool.NewCache(),
		txq:       make([]*skb.Buff, cfg.BatchSize()),
		rxBufSize: cfg.RxBufSize,
		headroom:  max(cfg.HeadroomBytes(), sh.pool.Headroom()),
		extra:     extra,
		thr:       cfg.CopybreakThreshold(),
		cost:      cfg.DoorbellCost,
		clone:     cfg.CloneOnXmit,
		timer:     t,
		shared:    sh,
	}
}

// fillRx posts a buffer in every slot of the receive ring.
func (d *Device) fillRx() error {
	r := d.rx
	for range r.slots {
		b, err := d.newRxBuf()
		if err != nil {
			return err
		}
		r.repost(b, d.dma(b))
	}
	r.publish()
	return nil
}

// newRxBuf allocates an empty receive buffer with the configured headroom
// and RxBufSize bytes of room after it.
func (d *Device) newRxBuf() (*skb.Buff, error) {
	b, err := d.cache.Alloc(d.rxBufSize + d.extra)
	if err != nil {
		return nil, err
	}
	if d.extra > 0 {
		b.Reserve(d.extra)
	}
	return b, nil
}

// dma returns the window of b's block the device may write: RxBufSize bytes
// after the headroom.
func (d *Device) dma(b *skb.Buff) []byte {
	h := b.Headroom()
	return b.Head()[h : h+d.rxBufSize : h+d.rxBufSize]
}

// enter marks a call in progress on the owner's goroutine; it reports false
// (and the call must return ErrClosed) once Close has begun.
func (d *Device) enter() bool {
	if d.state.Add(2)&1 != 0 {
		d.exit()
		return false
	}
	return true
}

// exit ends a call; the last call to end after Close releases the device.
func (d *Device) exit() {
	if d.state.Add(-2) == 1 {
		d.release()
	}
}

// exitPoll is exit for Poll, which marks the device as polling while it
// runs.
func (d *Device) exitPoll() {
	d.polling.Store(false)
	d.exit()
}

// Xmit queues b on the transmit ring and rings the doorbell when more is
// false (ndo_start_xmit with xmit_more). When Xmit finds the ring full
// (TxAvail 0) it counts tx_ring_full and rings the doorbell first; memring's
// device empties the ring on every doorbell, so Xmit never returns
// netdev.ErrQueueFull. Xmit takes ownership of b, also when it returns an
// error. It returns an error wrapping netdev.ErrTooBig for a packet longer
// than the peer's RxBufSize (dropped and counted in tx_dropped_too_big, after
// ringing the doorbell for the packets queued before it), or wrapping
// netdev.ErrClosed after Close. It allocates nothing.
func (d *Device) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("memring", b)
	}
	if !d.enter() {
		b.Free()
		d.txClosed.Add(1)
		return errXmitClosed
	}
	defer d.exit()
	if b.Len() > d.maxLen {
		d.cache.Free(b)
		d.ctr.TxDrop(netdev.DropTooBig, 1)
		d.doorbell()
		return errXmitTooBig
	}
	if d.txn == len(d.txq) {
		d.ctr.TxRingFull()
		d.doorbell()
	}
	if d.clone {
		c := d.cache.Clone(b)
		d.cache.Free(b)
		b = c
	}
	d.txq[d.txn] = b
	d.txn++
	if !more {
		d.doorbell()
	}
	return nil
}

// Flush rings the doorbell for whatever Xmit queued; with nothing queued it
// does nothing and counts no doorbell. It returns an error wrapping
// netdev.ErrClosed after Close.
func (d *Device) Flush() error {
	if !d.enter() {
		return errFlushClose
	}
	defer d.exit()
	d.doorbell()
	return nil
}

// TxAvail returns how many more packets Xmit can queue before the ring is
// full: Batch minus those queued. It returns 0 after Close.
func (d *Device) TxAvail() int {
	if !d.enter() {
		return 0
	}
	defer d.exit()
	return len(d.txq) - d.txn
}

// doorbell makes the device process the transmit ring: after DoorbellCost,
// each queued packet is copied into the peer's next posted receive buffer (or
// dropped, counted in the peer's rx_dropped_nobuf, when none is posted) and
// then freed into the cache, as a NIC completes a transmit descriptor (the
// caller's buffer itself, never a clone: seed 000). The filled slots are
// published to the peer once per doorbell.
func (d *Device) doorbell() {
	n := d.txn
	if n == 0 {
		return
	}
	if d.cost > 0 {
		spin(d.cost)
	}
	r := d.peer.rx
	bytes := 0
	var nobuf uint64
	r.mu.Lock()
	if r.closed {
		for i, b := range d.txq[:n] {
			bytes += b.Len()
			d.cache.Free(b)
			d.txq[i] = nil
		}
		r.mu.Unlock()
		r.closeD.Add(uint64(n))
		d.txn = 0
		d.ctr.TxDoorbell(n, bytes)
		return
	}
	fill := r.fill.Load()
	for i, b := range d.txq[:n] {
		l := b.Len()
		bytes += l
		if fill == r.cachedPost {
			r.cachedPost = r.post.Load()
		}
		if fill == r.cachedPost {
			nobuf++
		} else {
			s := r.slot(fill)
			b.CopyBits(0, s.dma[:l])
			s.n = l
			fill++
		}
		d.cache.Free(b)
		d.txq[i] = nil
	}
	r.fill.Store(fill)
	r.mu.Unlock()
	if nobuf > 0 {
		r.nobuf.Add(nobuf)
	}
	d.txn = 0
	d.ctr.TxDoorbell(n, bytes)
	r.wake()
}

// spin busy-waits for at least dur: the CPU is held, as by an MMIO write or a
// system call, not given to another goroutine.
func spin(dur time.Duration) {
	start := time.Now()
	for time.Since(start) < dur {
	}
}

// Poll hands up to budget received packets to h, in arrival order, without
// blocking (napi_poll), and returns how many it handed over. A packet shorter
// than the copybreak threshold is copied into a right-sized buffer from the
// Cache (when a smaller block than the ring buffer's holds it and the
// headroom: netdev.Copybreak) and its ring buffer is reposted at once (seed 001, counted in
// rx_copybreak); a longer one is handed over as it sits in the ring buffer,
// and a fresh buffer from the Cache is posted in its place. When the pool has
// no buffer for either, the packet is dropped (rx_dropped_nobuf) and its ring
// buffer reposted, so that the ring never runs dry. The reposted slots are
// published once per call. h owns each buffer it is given; it may call Xmit
// on either device, and Close, but not Poll (which panics then, see
// netdev.NestedPoll); once the device is closed Poll
// hands nothing more over, and returns an error wrapping netdev.ErrClosed
// with the count it handed over. Budget 0 or less hands nothing over. Poll
// returns an error wrapping netdev.ErrClosed after Close, and allocates
// nothing on the Go heap.
func (d *Device) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("memring: Poll with a nil handler")
	}
	if !d.enter() {
		return 0, errPollClosed
	}
	if !d.polling.CompareAndSwap(false, true) {
		d.exit()
		netdev.NestedPoll("memring")
	}
	defer d.exitPoll()
	r := d.rx
	n := 0
	for n < budget && r.ready() {
		if d.state.Load()&1 != 0 {
			break // closed while handing over: stop, the rest is freed on return
		}
		s := r.slot(r.poll)
		r.poll++
		b, l := s.b, s.n
		s.b, s.dma = nil, nil
		b.Put(l)
		var out *skb.Buff
		if l < d.thr {
			if out = d.copybreak(b); out != nil {
				d.ctr.RxCopybreak()
				b.Trim(0)
				r.repost(b, d.dma(b))
			}
		}
		if out == nil {
			nb, err := d.newRxBuf()
			if err != nil {
				d.ctr.RxDrop(netdev.DropNoBuffer, 1)
				b.Trim(0)
				r.repost(b, d.dma(b))
				continue
			}
			r.repost(nb, d.dma(nb))
			out = b
		}
		d.ctr.RxPacket(l)
		n++
		h(out)
	}
	r.publish()
	if d.state.Load()&1 != 0 {
		return n, errPollClosed // closed by h, or by another goroutine
	}
	return n, nil
}

// copybreak returns a right-sized copy of b with the device's headroom, or
// nil.
func (d *Device) copybreak(b *skb.Buff) *skb.Buff {
	return netdev.Copybreak(d.cache, b, d.thr, d.headroom)
}

// Wait blocks until Poll would find a packet, the timeout passes (a negative
// timeout waits without limit, 0 does not block) or the device is closed.
// It sleeps on a channel the peer's doorbell signals, never spinning. It
// returns nil when a packet is ready, an error wrapping netdev.ErrTimeout
// (os.ErrDeadlineExceeded), or one wrapping netdev.ErrClosed after Close,
// also when Close is called while it waits. It allocates nothing.
func (d *Device) Wait(timeout time.Duration) error {
	if !d.enter() {
		return errWaitClosed
	}
	defer d.exit()
	r := d.rx
	if r.ready() {
		return nil
	}
	if timeout == 0 {
		return errWaitTime
	}
	var expired <-chan time.Time
	if timeout > 0 {
		d.timer.Reset(timeout)
		defer d.timer.Stop()
		expired = d.timer.C
	}
	for {
		r.waiting.Store(true)
		if r.ready() {
			r.waiting.Store(false)
			return nil
		}
		select {
		case <-r.notify:
		case <-d.done:
			r.waiting.Store(false)
			return errWaitClosed
		case <-expired:
			r.waiting.Store(false)
			return errWaitTime
		}
		r.waiting.Store(false)
	}
}

// Cache returns the pool cache the device allocates receive buffers from and
// frees transmitted buffers into. Callers on the owner's goroutine may
// allocate transmit buffers from it and free received buffers into it until
// Close, which closes it; buffers still held after Close are freed with
// their Free method.
func (d *Device) Cache() *pool.Cache { return d.cache }

// Stats returns a snapshot of the device's counters. Safe for concurrent
// use. rx_dropped_nobuf counts packets the peer's doorbell found no posted
// buffer for, and packets dropped because the pool had no buffer;
// rx_dropped_closed counts packets that reached the ring after Close or were
// never polled; tx_dropped_closed counts packets still queued at Close or
// given to Xmit after it.
func (d *Device) Stats() netdev.Stats {
	s := d.ctr.Snapshot()
	s.RxDropped[netdev.DropNoBuffer] += d.rx.nobuf.Load()
	s.RxDropped[netdev.DropClosed] += d.rx.closeD.Load()
	s.TxDropped[netdev.DropClosed] += d.txClosed.Load()
	return s
}

// Close stops the device: it wakes a Wait in progress, frees the packets
// still queued for transmit (tx_dropped_closed) and every receive buffer
// still posted or filled (the filled ones count in rx_dropped_closed), stops
// the peer's doorbell from filling the ring (what the peer sends afterwards
// counts in rx_dropped_closed too) and closes the Cache. Safe for concurrent
// use: called from another goroutine while the owner is inside a call, it
// returns at once and the owner frees the buffers as that call returns;
// called while the owner is between calls, it frees them itself, into the
// Cache, so it must not race with the owner using the Cache outside the
// device's methods (netdev.Device.Cache): stop such an owner first.
// Closing the second device of a pair closes the pool NewPair made, and
// returns its error (wrapping pool.ErrLeak when buffers are still held),
// unless it returned at once because the owner was inside a call: the
// owner's release closes the pool then, and its error is not reported. A
// second Close returns an error wrapping netdev.ErrClosed.
func (d *Device) Close() error {
	old := d.state.Or(1)
	if old&1 != 0 {
		return errCloseAgain
	}
	close(d.done)
	if old>>1 == 0 {
		return d.release()
	}
	return nil
}

// release frees everything the device holds; it runs once, on the goroutine
// that left the device closing and idle.
func (d *Device) release() error {
	if !d.released.CompareAndSwap(false, true) {
		return nil
	}
	for i, b := range d.txq[:d.txn] {
		b.Free()
		d.txq[i] = nil
	}
	d.txClosed.Add(uint64(d.txn))
	d.txn = 0
	r := d.rx
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.closeD.Add(r.fill.Load() - r.poll)
	for i := r.poll; i != r.posted; i++ {
		s := r.slot(i)
		s.b.Free()
		s.b, s.dma = nil, nil
	}
	d.cache.Close()
	return d.shared.put()
}
