package netdev

import (
	"fmt"
	"time"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Handler receives one packet from Poll. The handler owns b: it must Free it
// (into the device's Cache, on the device's goroutine, is fastest) or pass it
// on to a function that takes ownership, such as a device's Xmit: another
// device's (a forwarder), or the polled device's own (an echo server,
// traffic.Echo), which a driver must allow: it may not hold a lock across
// the handler that its Xmit or Flush takes (netdevtest's "xmit in poll").
// A handler must not call Poll of the device it was called from (drivers
// panic then, see NestedPoll); it may Close it, and call its Xmit, Flush,
// TxAvail and Stats. Wait has no use there: the Poll that called the
// handler hands over what is pending once the handler returns.
type Handler func(b *skb.Buff)

// Device is one queue of a network device, a socket or a simulated NIC, as a
// driver presents it. See the package documentation for the rules of
// transmit, receive and concurrency.
type Device interface {
	// Xmit queues b for transmission and rings the doorbell unless more is
	// true and the ring has room (ndo_start_xmit with xmit_more). Xmit takes
	// ownership of b, also when it returns an error; b must not be nil (Xmit
	// panics: a nil buffer is the caller's bug, not a packet to drop). It
	// returns ErrQueueFull, ErrTooBig, ErrClosed or the wrapped error of the
	// doorbell's system call; a failed doorbell drops what was queued,
	// counted in tx_dropped. After Close it frees b, counts it in
	// tx_dropped_closed and returns ErrClosed.
	Xmit(b *skb.Buff, more bool) error

	// Flush rings the doorbell now for whatever Xmit queued. It returns the
	// wrapped error of the doorbell's system call, or ErrClosed.
	Flush() error

	// TxAvail returns how many more packets Xmit can queue before the ring
	// is full (after which Xmit rings the doorbell, and drops if the ring is
	// still full).
	TxAvail() int

	// Poll receives up to budget packets without blocking and calls h for
	// each, in arrival order (napi_poll); h must not be nil (Poll panics,
	// before it receives anything). A budget of 0 or less hands nothing
	// over. It returns how many it handed to h.
	// Packets the device cannot carry whole (truncated, too big for the
	// receive buffer, no buffer free) are dropped and counted, never handed
	// over; a link-layer device hands over frames whose headers it cannot
	// parse (a capture tool wants them) and counts them, as its driver
	// documents. A device whose packets wait in a kernel queue until it
	// posts a buffer (a socket) may instead leave them there and return an
	// error wrapping pool.ErrExhausted, as its driver documents. It returns
	// ErrClosed after Close, or the wrapped error of the receive system
	// call. When the device is closed while Poll runs (by h,
	// or by another goroutine), Poll hands nothing more over and returns
	// ErrClosed with the count it handed over.
	Poll(budget int, h Handler) (int, error)

	// Wait blocks until Poll would find a packet or timeout passes; a
	// negative timeout waits without limit. It returns nil when there is
	// something to receive, ErrTimeout (never before timeout, and for a
	// short timeout within a few ms of it: not rounded up to the kernel's
	// tick), or ErrClosed once the device is closed (Close wakes a waiting
	// Wait).
	Wait(timeout time.Duration) error

	// Cache returns the pool cache the device allocates receive buffers
	// from. Callers on the device's goroutine may allocate transmit buffers
	// from it and free received buffers into it. Close closes it: buffers
	// freed into it afterwards go straight to the pool. Like every Cache it
	// is for one goroutine at a time, and Close, which closes it, counts as
	// a use: a Close from another goroutine must not race with the owner
	// using the Cache outside the device's methods (allocating the next
	// packet to send, freeing one it kept). To stop an owner that does,
	// stop it first (a context or a flag it checks), then Close; the
	// device's own methods are safe to race with Close, and return
	// ErrClosed.
	Cache() *pool.Cache

	// Stats returns a snapshot of the device's counters. Safe for concurrent
	// use, also after Close. Each figure is as of the last completed batch;
	// read while the owner runs, the figures are not taken at one instant
	// (each is read on its own, without a lock on the datapath), so
	// tx_bytes may already count a batch that tx_packets does not yet: read
	// them after the owner stops for figures that agree.
	Stats() Stats

	// Close stops the device, sends or drops (and counts, once each) the
	// packets still queued for transmit, frees every buffer it holds and
	// releases its resources. Safe for concurrent use: called while the
	// owner is inside Poll or Wait, it wakes the owner, and the buffers are
	// freed as that call returns. Called while Poll runs, from its handler
	// or from another goroutine, it does not wait for Poll to return (the
	// handler may be the caller). Later calls return ErrClosed. It closes
	// the Cache: see Cache for the one use of it that must not race with
	// Close.
	Close() error
}

// BusyPoller is a Device that can busy-poll in one call: spin on its
// receive queue until a packet comes, as the kernel's napi_busy_loop does
// for a socket with SO_BUSY_POLL, rather than leave the spinning to a
// caller's loop of Polls. A driver implements it where each look at the
// queue is a system call (the UDP driver), so that the spin can make one
// probe after another with nothing in between; a ring in user memory
// (memring, AF_XDP) or a kernel ring mapped into the process (AF_PACKET's
// TPACKET_V3) gains nothing from it. Callers that spin (traffic's
// busy-polling ping-pong, echo server and sink) use it when the device has
// it. The spin holds its P: a program on one P (GOMAXPROCS 1) yields it
// (runtime.Gosched) after a BusyPoll that found nothing, or its other
// goroutines run only when the runtime preempts the spin (every 10-20 ms).
type BusyPoller interface {
	Device

	// BusyPoll hands over up to budget packets as Poll does (h owns each
	// buffer it is given), first
	// spinning, when nothing is pending, until a packet comes or timeout
	// passes (a negative timeout spins without limit, zero looks once),
	// one CPU busy meanwhile; packets the device drops (and counts) do
	// not end the spin. It returns what Poll returns, (0, nil) when
	// the timeout passed with nothing received (never before it; after it
	// by at most the driver's round of probes and one more, as it
	// documents), and
	// ErrClosed when the device is closed during the spin (Close from
	// another goroutine ends it).
	BusyPoll(budget int, h Handler, timeout time.Duration) (int, error)
}

// Defaults shared by the drivers.
const (
	// DefaultHeadroom is the headroom reserved in every receive and
	// transmit buffer, in bytes (skb.DefaultHeadroom).
	DefaultHeadroom = skb.DefaultHeadroom
	// DefaultCopybreak is the receive copybreak threshold in bytes: shorter
	// packets are copied into a right-sized buffer (seed 001: SKB_TSHOLD).
	DefaultCopybreak = 256
	// CopybreakOff, as Config.Copybreak, turns copybreak off.
	CopybreakOff = -1
	// NoHeadroom, as Config.Headroom, asks for receive buffers with no
	// headroom at all.
	NoHeadroom = -1
	// DefaultBatch is the transmit ring's depth and the receive batch: the
	// most packets one doorbell or one receive call moves.
	DefaultBatch = 64
)

// Config holds the settings every driver takes. The zero Config is usable:
// the drivers fill in the defaults.
type Config struct {
	// Pool is where buffers come from; nil makes the driver create its own
	// pool, closed with the device.
	Pool *pool.Pool
	// Headroom is reserved in every receive buffer, in bytes; 0 means
	// DefaultHeadroom and NoHeadroom means none. A driver may keep more:
	// driver/memring never gives less than its pool reserves (128 bytes
	// with the default pool), while driver/udp gives exactly this; a
	// memring test of a short headroom gives the pair a pool made with
	// that headroom (pool.Config.Headroom).
	Headroom int
	// Copybreak is the receive copybreak threshold in bytes: 0 means
	// DefaultCopybreak, CopybreakOff turns it off.
	Copybreak int
	// Batch is the transmit ring's depth and the receive batch; 0 means
	// DefaultBatch.
	Batch int
}

// Limits that Validate enforces.
const (
	// MaxBatch is the largest Batch: a transmit ring or receive batch of
	// more than this many packets buys nothing and costs memory.
	MaxBatch = 4096
	// MaxHeadroom is the largest Headroom, in bytes.
	MaxHeadroom = 4096
)

// Validate checks the settings every driver takes: Batch in [0, MaxBatch],
// Headroom in [NoHeadroom, MaxHeadroom], Copybreak >= CopybreakOff, and a
// pool that is not closed. It returns an error wrapping ErrConfig that names
// the field. Drivers call it from Open.
func (c Config) Validate() error {
	switch {
	case c.Batch < 0 || c.Batch > MaxBatch:
		return fmt.Errorf("%w: batch %d (0 to %d)", ErrConfig, c.Batch, MaxBatch)
	case c.Headroom < NoHeadroom || c.Headroom > MaxHeadroom:
		return fmt.Errorf("%w: headroom %d (NoHeadroom, 0 to %d)", ErrConfig, c.Headroom, MaxHeadroom)
	case c.Copybreak < CopybreakOff:
		return fmt.Errorf("%w: copybreak %d (CopybreakOff, 0 for the default, or a threshold in bytes)", ErrConfig, c.Copybreak)
	case c.Pool != nil && c.Pool.Closed():
		return fmt.Errorf("%w: the pool is closed", ErrConfig)
	}
	return nil
}

// CopybreakThreshold returns the effective threshold: DefaultCopybreak for 0,
// 0 (off) for CopybreakOff or any negative value.
func (c Config) CopybreakThreshold() int {
	switch {
	case c.Copybreak == 0:
		return DefaultCopybreak
	case c.Copybreak < 0:
		return 0
	}
	return c.Copybreak
}

// HeadroomBytes returns the effective headroom: DefaultHeadroom for 0, and 0
// for NoHeadroom.
func (c Config) HeadroomBytes() int {
	switch {
	case c.Headroom == 0:
		return DefaultHeadroom
	case c.Headroom < 0:
		return 0
	}
	return c.Headroom
}

// BatchSize returns the effective batch: DefaultBatch for 0.
func (c Config) BatchSize() int {
	if c.Batch <= 0 {
		return DefaultBatch
	}
	return c.Batch
}

// Copybreak applies receive copybreak to b (seed 001, SKB_TSHOLD): when b is
// linear and shorter than threshold bytes, it copies b's data into a
// right-sized buffer from c with at least headroom bytes of headroom (one in
// a smaller block than b's: with so much headroom that none is smaller, it
// copies nothing), copies b's metadata and header offsets
// (skb.Buff.CopyHeader) with the bytes of headers already pulled, as far as
// the copy's headroom reaches (an offset further back is unset, as is
// CHECKSUM_PARTIAL whose csum_start is), and returns it,
// leaving b for the driver to repost; otherwise, or when no small buffer is
// available, it returns nil and b is unchanged. Copybreak does not take
// ownership of b; the caller owns the returned buffer and must Free it or pass
// it on to a function that takes ownership.
func Copybreak(c *pool.Cache, b *skb.Buff, threshold, headroom int) *skb.Buff {
	n := b.Len()
	if n >= threshold || b.IsNonlinear() {
		return nil
	}
	extra := max(0, headroom-c.Headroom())
	small, err := c.Alloc(n + extra)
	if err != nil {
		return nil
	}
	if small.End() >= b.End() {
		// The headroom asked for leaves no smaller block: a copy would
		// save nothing.
		c.Free(small)
		return nil
	}
	small.Reserve(extra)
	copy(small.Put(n), b.Data())
	if p := pulled(b); p > 0 {
		// Headers already pulled: their bytes too, as far as the copy's
		// headroom reaches (CopyHeader unsets those beyond).
		hc := min(p, small.Headroom(), b.Headroom())
		copy(small.Head()[small.Headroom()-hc:small.Headroom()], b.Head()[b.Headroom()-hc:b.Headroom()])
	}
	small.CopyHeader(b)
	return small
}

// pulled returns how far before b's data its header offsets and
// CHECKSUM_PARTIAL's csum_start reach, in bytes; 0 when none is before it.
func pulled(b *skb.Buff) int {
	p := 0
	if b.MacHeaderWasSet() {
		p = max(p, -b.MacOffset())
	}
	if b.NetworkHeaderWasSet() {
		p = max(p, -b.NetworkOffset())
	}
	if b.TransportHeaderWasSet() {
		p = max(p, -b.TransportOffset())
	}
	if b.IPSummed() == skb.ChecksumPartial {
		p = max(p, -b.CsumStart())
	}
	return p
}
