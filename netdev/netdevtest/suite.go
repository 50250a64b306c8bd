package netdevtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Run runs the conformance suite: one subtest per rule of package netdev,
// each on a fresh pair from f and a fresh pool, after which both devices are
// closed and the pool must have every buffer back (no buffer in flight,
// nothing in pool.Outstanding, pool.Close returns nil). The subtests, and
// what each checks:
//
//   - ordering: packets sent in bursts of 1, 7 and 64 (ended by more=false
//     or by Flush), with payloads from 4 bytes to MaxPayload (around the
//     copybreak threshold too), arrive in order, each once, byte for byte.
//   - ownership: Xmit of a packet longer than the device carries returns an
//     error wrapping netdev.ErrTooBig, frees the packet before returning and
//     counts it in tx_dropped_too_big;
//     buffers handed to the handler stay the handler's: kept across later
//     Polls they are distinct and unchanged. No double free (the debug pool
//     panics), no leak.
//   - no clone: Xmit and Flush of 32 packets built beforehand take no more
//     buffer headers from the pool than blocks (pool.Stats: header
//     allocations beyond the classes' block allocations, which a clone,
//     skb_clone, makes): the device transmits the caller's buffer, or
//     copies it, and never clones it per send. (A device that copied into
//     page frags would count too.)
//   - doorbell: more=false rings one doorbell per packet (tx_doorbells);
//     bursts with more=true and Flush ring one per burst (up to one more per
//     ring's worth); Xmit with more=true past a full ring rings by itself and
//     those packets arrive without Flush (a ring still full after that
//     doorbell may refuse with ErrQueueFull); an Xmit that fails rings for
//     the packets queued before it; Close sends or frees the packets still
//     queued, counting each in tx_packets or tx_dropped.
//   - backpressure: TxAvail falls by one per packet queued with more=true
//     and comes back after Flush; Xmit returns ErrQueueFull only when
//     TxAvail was 0, frees the packet and counts it in tx_ring_full and
//     tx_dropped_ring_full; tx_packets + tx_dropped equals the packets given.
//   - stats, for copybreak on, off, and 100 bytes with 256 bytes of
//     headroom: tx_packets and tx_bytes equal what Xmit accepted, rx_packets
//     and rx_bytes what the handler got, rx_copybreak the packets under the
//     threshold (each in a right-sized buffer) and 0 when off; every
//     received buffer has at least the configured headroom; Stats, called
//     from another goroutine while traffic runs, never goes backwards (run
//     the suite with -race).
//   - poll: Poll(0) and Poll(-1) hand nothing over and Poll(budget) never
//     more than budget; Poll with a nil handler and Xmit of a nil buffer
//     panic with the driver's message (not a runtime error), taking nothing,
//     and so does Xmit of a freed buffer (netdev.BadXmit); Wait returns nil
//     when packets wait and wakes as one arrives, an
//     error matching ErrTimeout (os.ErrDeadlineExceeded) after its timeout
//     when none does (the fastest of up to twenty Waits of 2 ms within 3 ms
//     of it, not rounded up to the kernel's tick), and one matching net.ErrClosed
//     when another goroutine closes the device.
//   - closed: after Close every method (Xmit, which still frees the packet
//     and counts it in tx_dropped_closed, Flush, Poll, Wait, a second Close)
//     returns an error matching net.ErrClosed.
//   - close in poll: in closeInPollRounds rounds, Close called from a Poll
//     handler, while another goroutine calls Stats, returns within
//     closeWait (it does not wait for the Poll it is called from), and that
//     Poll hands nothing more over and returns an error matching
//     net.ErrClosed with the count it handed over; the owner then frees
//     the packet it kept into RX's Cache with Stats still running (run the
//     suite with -race: the device's release must not run on Stats'
//     goroutine, closing the Cache under the owner); every buffer comes
//     back.
//   - close race: in closeRounds rounds, another goroutine closes RX after
//     a random delay of up to 300 µs while RX's owner polls and waits with
//     packets arriving: Poll or Wait then returns an error matching
//     net.ErrClosed, Close returns, and every buffer comes back (run the
//     suite with -race: Close's wake-up must not race with the owner's
//     return).
//   - xmit in poll: a Poll handler on RX hands each packet to RX's own Xmit
//     and calls RX's Flush, as an echo server or a forwarder on one device
//     does (traffic.Echo): both return (a driver must not hold a lock
//     across the handler that Xmit takes; after xmitInPollWait the suite
//     prints the reason and every goroutine's stack and exits the test
//     binary, rather than hang), take the packet, and count it in RX's
//     tx_packets or tx_dropped.
//   - poll in poll: a Poll handler that calls RX's Poll panics with
//     netdev.NestedPoll's message, out of the outer Poll; RX then closes,
//     and every buffer comes back.
//   - panic in handler: a Poll handler that panics at its fourth packet
//     (recovered by the caller) does not get that packet or those before
//     it again: the Waits and Polls after it hand every other packet over
//     once, and RX stays usable.
//   - allocs: a steady-state cycle (allocate, fill and Xmit 64 packets,
//     Flush, Poll them back, free them) allocates nothing
//     (testing.AllocsPerRun), on a pool without debug mode, and neither
//     does a Wait that times out.
//   - overrun: 16 rings' worth sent without polling: every packet is
//     delivered (in order, once, intact) or counted in rx_dropped or
//     tx_dropped, and the device recovers.
//   - pool exhausted: RX polled with its pool's class exhausted: every
//     packet is delivered or counted.
//   - wait wakes: a Wait that returns nil has something for the Poll
//     after it (no stale wake-ups).
//   - closed peer: packets sent to a closed RX are freed and counted.
//   - busy poll, for a device that implements netdev.BusyPoller (skipped
//     for one that does not): BusyPoll with a budget of 0 or less hands
//     nothing over, with a nil handler panics with the driver's message;
//     on an idle device BusyPoll(0) returns (0, nil) at once and
//     BusyPoll(20 ms) not before 20 ms nor more than deliverWait after;
//     packets waiting are handed over in order, at most budget a call; a
//     packet sent 20 ms into a BusyPoll without limit is handed over by
//     it; Close from another goroutine ends such a BusyPoll with an error
//     matching net.ErrClosed; after Close BusyPoll returns one; every
//     buffer comes back.
//
// The poll subtest also checks Wait(0) (nil with packets waiting,
// ErrTimeout at once on an idle device), a budget of 1, and that no Wait
// returns ErrTimeout before its timeout; backpressure, that queueing the
// packets a fresh TxAvail promised never finds the ring full; ownership,
// that a packet one byte over MaxPayload is refused (ErrTooBig, freed,
// counted) or carried whole.
//
// A Lossy pair may lose up to LossyFraction of the packets of each subtest,
// never reorder, duplicate or corrupt one. Failures name the rule and the
// numbers seen. The whole suite takes a few seconds.
func Run(t *testing.T, f Factory) {
	t.Helper()
	RunPool(t, pool.Config{}, f)
}

// RunPool is Run with the suite's pools made from pc, for a driver that
// needs a pool of a certain shape: an AF_XDP driver whose UMEM is a
// Contiguous class, or one that needs a class of its frame size. The suite
// sets pc's Debug (on, except for the zero-allocation subtest) and Name.
// A bounded class (Max) must hold what the subtests keep at once: both
// devices' receive rings and queues, plus about 100 packets.
func RunPool(t *testing.T, pc pool.Config, f Factory) {
	t.Helper()
	s := &suite{f: f, pc: pc}
	t.Run("ordering", func(t *testing.T) { testOrdering(t, s) })
	t.Run("ownership", func(t *testing.T) { testOwnership(t, s) })
	t.Run("no clone", func(t *testing.T) { testNoClone(t, s) })
	t.Run("doorbell", func(t *testing.T) { testDoorbell(t, s) })
	t.Run("backpressure", func(t *testing.T) { testBackpressure(t, s) })
	t.Run("stats", func(t *testing.T) { testStats(t, s) })
	t.Run("poll", func(t *testing.T) { testPoll(t, s) })
	t.Run("closed", func(t *testing.T) { testClosed(t, s) })
	t.Run("close in poll", func(t *testing.T) { testCloseInPoll(t, s) })
	t.Run("close race", func(t *testing.T) { testCloseRace(t, s) })
	t.Run("xmit in poll", func(t *testing.T) { testXmitInPoll(t, s) })
	t.Run("poll in poll", func(t *testing.T) { testPollInPoll(t, s) })
	t.Run("panic in handler", func(t *testing.T) { testPanicInHandler(t, s) })
	t.Run("allocs", func(t *testing.T) { testAllocs(t, s) })
	t.Run("overrun", func(t *testing.T) { testOverrun(t, s) })
	t.Run("pool exhausted", func(t *testing.T) { testExhausted(t, s) })
	t.Run("wait wakes", func(t *testing.T) { testWaitWakes(t, s) })
	t.Run("closed peer", func(t *testing.T) { testClosedPeer(t, s) })
	t.Run("busy poll", func(t *testing.T) { testBusyPoll(t, s) })
}

// suite is what every subtest is given: the driver's factory and the shape
// of the pools to make.
type suite struct {
	f  Factory
	pc pool.Config
}

// seqs returns the set of sequence numbers from first to end-1.
func seqs(first, end uint32) map[uint32]bool {
	m := make(map[uint32]bool)
	for s := first; s < end; s++ {
		m[s] = true
	}
	return m
}

// small is the payload of the subtests that count rather than carry.
func (e *env) small(uint32) int { return min(64, e.pair.MaxPayload) }

func testOrdering(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	sizes := e.payloadSizes()
	size := func(seq uint32) int { return sizes[int(seq)%len(sizes)] }
	r := e.startReceiver(64)
	seq := uint32(0)
	for _, burst := range []int{1, 7, 64} {
		rounds := max(4, 96/burst)
		for i := range rounds {
			e.sendBurst(seq, burst, size, i%2 == 1)
			seq += uint32(burst)
			r.waitFor(int(seq), seq-1, fmt.Sprintf("ordering: bursts of %d", burst))
		}
	}
	recs := e.stopReceiver()
	e.checkDelivery(fmt.Sprintf("ordering: %d packets in bursts of 1, 7 and 64, payloads %v bytes", seq, sizes),
		recs, delivery{sent: int(seq)})
}

// oversized returns a packet longer than any device carries: the pool's
// largest buffer, filled to its end.
func (e *env) oversized(seq uint32) *skb.Buff {
	e.t.Helper()
	b, err := e.tx.Cache().Alloc(e.p.MaxAlloc())
	if err != nil {
		e.t.Fatalf("allocate a %d-byte buffer: %v", e.p.MaxAlloc(), err)
	}
	e.pair.Fill(b, seq, min(e.pair.MaxPayload, e.p.MaxAlloc()-FillSlack))
	b.Put(b.Tailroom())
	return b
}

func testOwnership(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)

	// A packet the device cannot carry: refused, freed, counted.
	big := e.oversized(^uint32(0))
	n := big.Len()
	before := e.tx.Stats()
	err := e.tx.Xmit(big, false)
	d := statsDelta(e.tx, before)
	switch {
	case err == nil:
		t.Errorf("Xmit of a %d-byte packet (MaxPayload %d) returned nil; want an error wrapping ErrTooBig", n, e.pair.MaxPayload)
	case errors.Is(err, net.ErrClosed):
		t.Errorf("Xmit of a %d-byte packet returned %v on an open device", n, err)
	case big.IsLive():
		t.Errorf("Xmit returned %v for a %d-byte packet but had not freed it when it returned: Xmit takes ownership, also when it returns an error", err, n)
	case d.TxDroppedTotal() != 1 || d.TxPackets != 0:
		t.Errorf("Xmit refused a %d-byte packet (%v): tx_dropped grew by %d, tx_packets by %d; want 1 and 0", n, err, d.TxDroppedTotal(), d.TxPackets)
	}
	switch {
	case err == nil:
	case !errors.Is(err, netdev.ErrTooBig):
		t.Errorf("Xmit of a %d-byte packet returned %v; want an error wrapping ErrTooBig, as Device.Xmit's doc says", n, err)
	case d.TxDropped[netdev.DropTooBig] != 1:
		t.Errorf("Xmit of a %d-byte packet returned %v and counted %v; want it in tx_dropped_too_big", n, err, d)
	}

	// One byte past MaxPayload: refused (ErrTooBig, freed, counted in
	// tx_dropped_too_big) or carried whole; never written past a receive
	// buffer.
	if pl := e.pair.MaxPayload + 1; e.overhead+pl+FillSlack <= e.p.MaxAlloc() {
		const edge = 1 << 30
		b := e.build(edge, pl)
		before := e.tx.Stats()
		err := e.tx.Xmit(b, false)
		d := statsDelta(e.tx, before)
		switch {
		case err == nil:
			var probs []string
			got := 0
			for _, r := range e.pollSync(1, 8, false) {
				if r.ok && r.seq == edge {
					if got++; r.bad != "" {
						probs = append(probs, r.bad)
					}
				}
			}
			if got != 1 {
				probs = append(probs, fmt.Sprintf("arrived %d times, want once", got))
			}
			report(t, fmt.Sprintf("ownership: a packet with MaxPayload+1 (%d) bytes of payload, accepted", pl), probs)
		case !errors.Is(err, netdev.ErrTooBig) || b.IsLive() || d.TxDropped[netdev.DropTooBig] != 1:
			t.Errorf("ownership: Xmit with MaxPayload+1 (%d) bytes of payload returned %v, packet live %v, tx_dropped_too_big +%d; want nil, or ErrTooBig with the packet freed and counted",
				pl, err, b.IsLive(), d.TxDropped[netdev.DropTooBig])
		}
	}

	// Buffers handed to the handler are its own: kept across later Polls,
	// none is handed over twice or changed under the handler.
	pl := min(1000, e.pair.MaxPayload)
	size := func(uint32) int { return pl }
	const rounds, burst = 3, 32
	var kept []rxRec
	for i := range rounds {
		seq := uint32(i * burst)
		e.sendBurst(seq, burst, size, i%2 == 0)
		kept = append(kept, e.pollSync(burst, burst/2, true)...)
	}
	e.checkDelivery(fmt.Sprintf("ownership: %d packets of %d bytes of payload, kept by the handler", rounds*burst, pl),
		kept, delivery{sent: rounds * burst})
	var probs []string
	owner := make(map[*skb.Buff]int)
	var scratch []byte
	for i, r := range kept {
		if j, dup := owner[r.buf]; dup {
			probs = append(probs, fmt.Sprintf("buffer %p handed to the handler twice (packets %d and %d) while the handler still owned it", r.buf, j, i))
			continue
		}
		owner[r.buf] = i
		if !r.ok || r.bad != "" {
			continue
		}
		if now := e.inspect(r.buf, &scratch); !now.ok || now.seq != r.seq || now.bad != "" {
			probs = append(probs, fmt.Sprintf("seq %d changed in the handler's buffer after later Polls: now seq %d ok %v %s", r.seq, now.seq, now.ok, now.bad))
		}
	}
	report(t, "ownership: received buffers kept by the handler", probs)
	c := e.rx.Cache()
	for i, r := range kept {
		if _, dup := owner[r.buf]; !dup {
			continue
		}
		delete(owner, r.buf)
		if i%2 == 0 {
			r.buf.Free()
		} else {
			c.Free(r.buf)
		}
	}
}

// blockless returns the buffer headers the pool has handed out without a
// block of their own: clones (and buffers built on page frags).
func blockless(st pool.Stats) int64 {
	n := int64(st.Headers.Allocs)
	for _, c := range st.Classes {
		n -= int64(c.Allocs)
	}
	return n
}

func testNoClone(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	const n = 32
	pl := e.small(0)
	bufs := make([]*skb.Buff, n)
	for i := range bufs {
		bufs[i] = e.build(uint32(i), pl)
	}
	before := blockless(e.p.Stats())
	for i, b := range bufs {
		if err := e.tx.Xmit(b, i < n-1); err != nil {
			t.Fatalf("Xmit(seq %d, more=%v): %v", i, i < n-1, err)
		}
	}
	if err := e.tx.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	// More headers than blocks: clones. (Fewer is legal: a block for a
	// buffer's own header, Linearize or CowHead on the caller's packet.)
	if d := blockless(e.p.Stats()) - before; d > 0 {
		t.Errorf("no clone: Xmit and Flush of %d packets took %d more buffer headers than blocks from the pool (clones, skb_clone); want none: the device transmits the caller's buffer", n, d)
	}
	recs := e.pollSync(n, n, false)
	e.checkDelivery(fmt.Sprintf("no clone: %d packets of %d bytes of payload", n, pl), recs, delivery{sent: n})
}

func testDoorbell(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	ring := e.tx.TxAvail()
	if ring < 1 {
		t.Fatalf("TxAvail of a fresh device is %d", ring)
	}
	r := e.startReceiver(64)
	seq := uint32(0)

	// more=false: one doorbell per packet.
	const single = 20
	before := e.tx.Stats()
	for range single {
		if _, err := e.send(seq, e.small(seq), false); err != nil {
			t.Fatalf("Xmit(seq %d, more=false): %v", seq, err)
		}
		seq++
		r.waitFor(int(seq), seq-1, "doorbell: packets sent with more=false")
	}
	if d := statsDelta(e.tx, before); d.TxDoorbells != single || d.TxPackets != single {
		t.Errorf("doorbell: %d packets sent with more=false rang %d doorbells (tx_doorbells) for %d tx_packets; want %d: one per packet",
			single, d.TxDoorbells, d.TxPackets, single)
	}

	// Bursts with more=true ended by Flush: one doorbell per burst, and one
	// more at most per ring's worth.
	bursts := []struct{ size, count int }{{7, 5}, {ring, 3}}
	if ring == 7 {
		bursts = bursts[:1]
	}
	for _, b := range bursts {
		before := e.tx.Stats()
		for range b.count {
			e.sendBurst(seq, b.size, e.small, true)
			seq += uint32(b.size)
			r.waitFor(int(seq), seq-1, fmt.Sprintf("doorbell: bursts of %d with Flush", b.size))
		}
		lo := b.count * ((b.size + ring - 1) / ring)
		hi := b.count * (b.size/ring + 1)
		d := statsDelta(e.tx, before)
		if d.TxDoorbells < uint64(lo) || d.TxDoorbells > uint64(hi) {
			t.Errorf("doorbell: %d bursts of %d packets with more=true, each ended by Flush, rang %d doorbells; want %d to %d (one per burst; the ring holds %d)",
				b.count, b.size, d.TxDoorbells, lo, hi, ring)
		}
		if d.TxPackets != uint64(b.size*b.count) {
			t.Errorf("doorbell: %d bursts of %d packets: tx_packets grew by %d", b.count, b.size, d.TxPackets)
		}
	}

	// A ring that fills rings the doorbell by itself. A ring that stays full
	// after that doorbell may refuse a packet (ErrQueueFull).
	fill := 2*ring + 3
	refused := make(map[uint32]bool)
	before = e.tx.Stats()
	for i := range fill {
		q := seq + uint32(i)
		b := e.build(q, e.small(0))
		err := e.tx.Xmit(b, true)
		switch {
		case err == nil:
		case errors.Is(err, netdev.ErrQueueFull):
			refused[q] = true
			if b.IsLive() {
				t.Errorf("doorbell: Xmit returned %v but had not freed the packet", err)
			}
		default:
			t.Fatalf("doorbell: Xmit(more=true) of packet %d of %d (ring of %d, no Flush): %v", i+1, fill, ring, err)
		}
	}
	accepted := fill - len(refused)
	if d := statsDelta(e.tx, before); d.TxDoorbells < uint64((fill-1)/ring) {
		t.Errorf("doorbell: %d packets queued with more=true and no Flush rang %d doorbells; a full ring of %d must ring by itself (want at least %d)",
			fill, d.TxDoorbells, ring, (fill-1)/ring)
	}
	r.waitFor(int(seq)+accepted-ring, seq+uint32(fill-ring)-1,
		fmt.Sprintf("doorbell: %d packets queued with more=true past a ring of %d (%d refused), before Flush: the ring must send at least %d by itself",
			fill, ring, len(refused), accepted-ring))
	if err := e.tx.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	seq += uint32(fill)
	r.waitFor(int(seq)-len(refused), seq-1, "doorbell: Flush after a ring that filled")

	// An Xmit that fails rings the doorbell for what was queued before it.
	const queued = 5
	before = e.tx.Stats()
	for i := range queued {
		if _, err := e.send(seq+uint32(i), e.small(0), true); err != nil {
			t.Fatalf("Xmit(more=true): %v", err)
		}
	}
	seq += queued
	big := e.oversized(^uint32(0))
	err := e.tx.Xmit(big, true)
	if err == nil {
		t.Errorf("doorbell: Xmit of a %d-byte packet (MaxPayload %d) returned nil; want an error", big.Len(), e.pair.MaxPayload)
		e.tx.Flush()
	}
	r.waitFor(int(seq)-len(refused), seq-1, fmt.Sprintf("doorbell: the %d packets queued with more=true before an Xmit that failed (%v), with no Flush after it", queued, err))
	if d := statsDelta(e.tx, before); d.TxDoorbells < 1 || d.TxPackets != queued {
		t.Errorf("doorbell: %d packets queued, then an Xmit that failed (%v): tx_doorbells grew by %d, tx_packets by %d; want at least 1 and %d",
			queued, err, d.TxDoorbells, d.TxPackets, queued)
	}

	// Close frees what is still queued.
	before = e.tx.Stats()
	var bufs []*skb.Buff
	optional := make(map[uint32]bool)
	for i := range queued {
		b := e.build(seq, e.small(0))
		if err := e.tx.Xmit(b, true); err != nil {
			t.Fatalf("Xmit(more=true): %v", err)
		}
		bufs = append(bufs, b)
		optional[seq] = true
		seq++
		_ = i
	}
	if err := e.tx.Close(); err != nil {
		t.Errorf("TX.Close with %d packets queued: %v", queued, err)
	}
	// A device may send what is queued as it closes, or drop it; what it
	// dropped it has freed (what it sent may live on at the receiver, when
	// the buffers themselves cross: the receiver stops before they are
	// looked at).
	recs := e.stopReceiver()
	live := 0
	for _, b := range bufs {
		if b.IsLive() {
			live++
		}
	}
	d := statsDelta(e.tx, before)
	if d.TxPackets+d.TxDroppedTotal() != queued {
		t.Errorf("doorbell: %d packets queued at Close: tx_packets grew by %d and tx_dropped by %d; want them to add up to %d",
			queued, d.TxPackets, d.TxDroppedTotal(), queued)
	}
	if uint64(live) > d.TxPackets {
		t.Errorf("doorbell: TX.Close left %d of the %d packets queued with more=true unfreed, and sent %d", live, queued, d.TxPackets)
	}
	e.checkDelivery("doorbell", recs, delivery{sent: int(seq), refused: refused, optional: optional})
}

func testBackpressure(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	ring := e.tx.TxAvail()
	if ring < 1 {
		t.Fatalf("TxAvail of a fresh device is %d", ring)
	}
	r := e.startReceiver(64)
	seq := uint32(0)

	// TxAvail falls as packets queue, and comes back after the doorbell.
	// Queueing the TxAvail packets promised never finds the ring full.
	promised := e.tx.Stats()
	for k := 1; k <= ring; k++ {
		avail := e.tx.TxAvail()
		if _, err := e.send(seq, e.small(0), true); err != nil {
			t.Fatalf("backpressure: Xmit(more=true) of packet %d of %d with TxAvail %d: %v (ErrQueueFull only for a ring that stays full)", k, ring, avail, err)
		}
		seq++
		if got := e.tx.TxAvail(); k < ring && got != ring-k {
			t.Errorf("backpressure: TxAvail is %d after %d packets queued with more=true in a ring of %d; want %d", got, k, ring, ring-k)
			break
		}
	}
	if d := statsDelta(e.tx, promised); d.TxRingFull != 0 || d.TxDroppedTotal() != 0 {
		t.Errorf("backpressure: queueing the %d packets a fresh TxAvail promised (more=true) counted tx_ring_full %d, tx_dropped %d; want 0: TxAvail overstates the ring",
			ring, d.TxRingFull, d.TxDroppedTotal())
	}
	if err := e.tx.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for got := e.tx.TxAvail(); got != ring; got = e.tx.TxAvail() {
		if time.Now().After(deadline) {
			t.Errorf("backpressure: TxAvail is %d 2s after Flush; want %d back", got, ring)
			break
		}
		time.Sleep(time.Millisecond)
		e.tx.Flush()
	}
	r.waitFor(int(seq), seq-1, "backpressure: a ring's worth of packets after Flush")

	// Past a full ring: ErrQueueFull only when the ring stays full, counted.
	attempts := 3*ring + 1
	start := seq
	before := e.tx.Stats()
	refused := make(map[uint32]bool)
	for range attempts {
		avail := e.tx.TxAvail()
		b := e.build(seq, e.small(0))
		err := e.tx.Xmit(b, true)
		switch {
		case err == nil:
		case errors.Is(err, netdev.ErrQueueFull):
			refused[seq] = true
			if avail > 0 {
				t.Errorf("backpressure: Xmit returned %v with TxAvail %d: only a ring still full after the doorbell may refuse", err, avail)
			}
			if b.IsLive() {
				t.Errorf("backpressure: Xmit returned %v but had not freed the packet", err)
			}
		default:
			t.Fatalf("backpressure: Xmit(more=true) of packet %d of %d: %v", seq-start+1, attempts, err)
		}
		seq++
	}
	if err := e.tx.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	full := len(refused)
	r.waitFor(int(seq)-full, seq-1, fmt.Sprintf("backpressure: %d packets queued past a ring of %d, %d refused", attempts, ring, full))
	d := statsDelta(e.tx, before)
	switch {
	case d.TxDropped[netdev.DropRingFull] != uint64(full):
		t.Errorf("backpressure: Xmit returned ErrQueueFull %d times; tx_dropped_ring_full grew by %d", full, d.TxDropped[netdev.DropRingFull])
	case d.TxRingFull < uint64(full):
		t.Errorf("backpressure: Xmit returned ErrQueueFull %d times; tx_ring_full grew by only %d", full, d.TxRingFull)
	case d.TxPackets != uint64(attempts-full) || d.TxPackets+d.TxDroppedTotal() != uint64(attempts):
		t.Errorf("backpressure: %d packets given to Xmit, %d refused: tx_packets grew by %d and tx_dropped by %d; want %d and %d",
			attempts, full, d.TxPackets, d.TxDroppedTotal(), attempts-full, full)
	}
	if full > 0 {
		t.Logf("backpressure: the ring stayed full %d times in %d packets", full, attempts)
	}
	recs := e.stopReceiver()
	e.checkDelivery("backpressure", recs, delivery{sent: int(seq), refused: refused})
}

func testStats(t *testing.T, s *suite) {
	for _, c := range []struct {
		name string
		cfg  netdev.Config
	}{
		{"copybreak=default", netdev.Config{}},
		{"copybreak=off", netdev.Config{Copybreak: netdev.CopybreakOff}},
		{"copybreak=100,headroom=256", netdev.Config{Copybreak: 100, Headroom: 256}},
	} {
		t.Run(c.name, func(t *testing.T) { testStatsWith(t, s, c.cfg) })
	}
}

// counters lists the counters of s that must never go backwards, with their
// names.
func counters(s netdev.Stats) (names []string, v []uint64) {
	names = []string{"rx_packets", "rx_bytes", "rx_copybreak", "rx_truncated",
		"tx_packets", "tx_bytes", "tx_doorbells", "tx_ring_full"}
	v = []uint64{s.RxPackets, s.RxBytes, s.RxCopybreak, s.RxTruncated,
		s.TxPackets, s.TxBytes, s.TxDoorbells, s.TxRingFull}
	for r := range netdev.NumDropReasons {
		names = append(names, "rx_dropped_"+r.String(), "tx_dropped_"+r.String())
		v = append(v, s.RxDropped[r], s.TxDropped[r])
	}
	return names, v
}

// watchStats calls Stats of both devices from its own goroutine until stop
// is closed, and reports any counter that went backwards.
func (e *env) watchStats(stop chan struct{}) (done func() []string) {
	var probs []string
	var wg sync.WaitGroup
	wg.Go(func() {
		var prev [2][]uint64
		for calls := 0; ; calls++ {
			select {
			case <-stop:
				return
			default:
			}
			for i, dev := range []netdev.Device{e.tx, e.rx} {
				names, v := counters(dev.Stats())
				for j := range v {
					if prev[i] != nil && v[j] < prev[i][j] && len(probs) < 8 {
						probs = append(probs, fmt.Sprintf("%s %s went from %d to %d", []string{"TX", "RX"}[i], names[j], prev[i][j], v[j]))
					}
				}
				prev[i] = v
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	return func() []string {
		close(stop)
		wg.Wait()
		return probs
	}
}

func testStatsWith(t *testing.T, s *suite, cfg netdev.Config) {
	e := open(t, s, cfg, true)
	sizes := e.payloadSizes()
	size := func(seq uint32) int { return sizes[int(seq)%len(sizes)] }
	txBefore, rxBefore := e.tx.Stats(), e.rx.Stats()
	watched := e.watchStats(make(chan struct{}))
	r := e.startReceiver(32)
	seq := uint32(0)
	var bytes uint64
	const rounds, burst = 12, 16
	for i := range rounds {
		bytes += uint64(e.sendBurst(seq, burst, size, i%2 == 0))
		seq += burst
		r.waitFor(int(seq), seq-1, "stats")
	}
	recs := e.stopReceiver()
	report(t, "stats: Stats called from another goroutine during traffic", watched())
	e.checkDelivery("stats", recs, delivery{sent: int(seq)})

	dtx, drx := statsDelta(e.tx, txBefore), statsDelta(e.rx, rxBefore)
	if dtx.TxPackets != uint64(seq) || dtx.TxBytes != bytes {
		t.Errorf("stats: Xmit accepted %d packets of %d bytes; tx_packets grew by %d, tx_bytes by %d", seq, bytes, dtx.TxPackets, dtx.TxBytes)
	}
	if dtx.TxDroppedTotal() != 0 {
		t.Errorf("stats: tx_dropped grew by %d with every Xmit accepted", dtx.TxDroppedTotal())
	}
	thr := cfg.CopybreakThreshold()
	hr := cfg.HeadroomBytes()
	var got, gotBytes, under uint64
	var probs []string
	for _, r := range recs {
		got++
		gotBytes += uint64(r.n)
		if r.headroom < hr {
			probs = append(probs, fmt.Sprintf("a received packet of %d bytes has %d bytes of headroom; want at least %d", r.n, r.headroom, hr))
		}
		if r.n < thr {
			under++
			if hr+thr <= pool.SmallSize && r.end > pool.SmallSize {
				probs = append(probs, fmt.Sprintf("a packet of %d bytes, under the copybreak threshold of %d, came in a %d-byte block; want a right-sized copy (%d bytes or less)", r.n, thr, r.end, pool.SmallSize))
			}
		}
	}
	if drx.RxPackets != got || drx.RxBytes != gotBytes {
		t.Errorf("stats: the handler got %d packets of %d bytes; rx_packets grew by %d, rx_bytes by %d", got, gotBytes, drx.RxPackets, drx.RxBytes)
	}
	if drx.RxCopybreak != under {
		t.Errorf("stats: the handler got %d packets under the copybreak threshold of %d bytes (0: off); rx_copybreak grew by %d", under, thr, drx.RxCopybreak)
	}
	report(t, fmt.Sprintf("stats: received buffers (headroom %d, copybreak %d)", hr, thr), probs)
}

// expectTimeout checks that Wait on RX, with nothing of the suite's to
// receive, returns ErrTimeout after its timeout. Packets that are not the
// suite's (neighbour discovery on a link) are polled away and Wait retried.
func (e *env) expectTimeout(what string) {
	t := e.t
	t.Helper()
	const timeout = 50 * time.Millisecond
	for try := 1; ; try++ {
		start := time.Now()
		err := e.rx.Wait(timeout)
		took := time.Since(start)
		if err == nil {
			n := e.pollStrays(what)
			if try < 3 {
				continue
			}
			t.Errorf("%s: Wait(%v) returned nil %d times in a row (Poll then found %d packets); want ErrTimeout", what, timeout, try, n)
			return
		}
		switch {
		case !errors.Is(err, netdev.ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded):
			t.Errorf("%s: Wait(%v) returned %v; want an error matching netdev.ErrTimeout (os.ErrDeadlineExceeded)", what, timeout, err)
		case took < timeout-time.Millisecond:
			t.Errorf("%s: Wait(%v) returned ErrTimeout after %v, before its timeout", what, timeout, took)
		case took > timeout+2*time.Second:
			t.Errorf("%s: Wait(%v) returned ErrTimeout only after %v", what, timeout, took)
		}
		return
	}
}

// pollStrays polls what RX has with one Poll(64), when a Wait that
// expected nothing returned nil, and frees it: packets that are not the
// suite's (neighbour discovery on a link) are expected, one of the
// suite's is an error. It returns how many packets it polled.
func (e *env) pollStrays(what string) int {
	t := e.t
	t.Helper()
	var scratch []byte
	c := e.rx.Cache()
	n, err := e.rx.Poll(64, func(b *skb.Buff) {
		if r := e.inspect(b, &scratch); r.ok {
			t.Errorf("%s: seq %d arrived", what, r.seq)
		}
		c.Free(b)
	})
	if err != nil {
		t.Fatalf("%s: RX.Poll(64): %v", what, err)
	}
	return n
}

// expectPrecise checks that a short Wait on RX, with nothing of the
// suite's to receive, keeps its timeout: the fastest of up to twenty
// Waits of 2 ms returns ErrTimeout within 3 ms of it (a receive timeout
// that the kernel counts in ticks, SO_RCVTIMEO, ends 1 to 2 ticks late: 8
// ms for 2 ms at HZ=250, every time; a loaded machine's stalls are late
// only now and then, so the check ends at the first Wait in time).
// Packets that are not the suite's are polled away and that Wait does not
// count.
func (e *env) expectPrecise(what string) {
	t := e.t
	t.Helper()
	const timeout, slack = 2 * time.Millisecond, 3 * time.Millisecond
	fastest, timedOut := time.Hour, 0
	for try := 0; try < 50 && timedOut < 20 && fastest > timeout+slack; try++ {
		start := time.Now()
		err := e.rx.Wait(timeout)
		took := time.Since(start)
		if err == nil {
			e.pollStrays(what)
			continue
		}
		if !errors.Is(err, netdev.ErrTimeout) {
			t.Errorf("%s: Wait(%v) returned %v; want an error matching netdev.ErrTimeout", what, timeout, err)
			return
		}
		timedOut++
		if took < timeout {
			t.Errorf("%s: Wait(%v) returned ErrTimeout after %v, before its timeout", what, timeout, took)
			return
		}
		fastest = min(fastest, took)
	}
	if timedOut == 0 {
		t.Errorf("%s: every Wait(%v) of %d found packets that were not the suite's; want some to time out", what, timeout, 50)
		return
	}
	if fastest > timeout+slack {
		t.Errorf("%s: the fastest of %d Waits of %v returned ErrTimeout after %v; want within %v of the timeout", what, timedOut, timeout, fastest, slack)
	}
}

// panicOf runs f and returns what it panicked with, as text ("" when it
// returned).
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "(empty panic)"
			}
		}
	}()
	f()
	return ""
}

func testPoll(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	e.expectTimeout("poll: Wait on an idle device")
	e.expectPrecise("poll: a short Wait on an idle device")

	const total, burst = 50, 10
	for seq := uint32(0); seq < total; seq += burst {
		e.sendBurst(seq, burst, e.small, true)
	}
	if err := e.rx.Wait(deliverWait); err != nil {
		t.Fatalf("poll: Wait(%v) with %d packets sent: %v; want nil", deliverWait, total, err)
	}
	c := e.rx.Cache()
	calls := 0
	n, err := e.rx.Poll(0, func(b *skb.Buff) { calls++; c.Free(b) })
	if n != 0 || calls != 0 || err != nil {
		t.Fatalf("poll: Poll(0) returned %d, %v and called the handler %d times with packets waiting; a budget of 0 hands none over", n, err, calls)
	}
	if n, err := e.rx.Poll(-1, func(b *skb.Buff) { calls++; c.Free(b) }); n != 0 || calls != 0 || err != nil {
		t.Fatalf("poll: Poll(-1) returned %d, %v and called the handler %d times with packets waiting; a negative budget hands none over", n, err, calls)
	}
	// Misuse panics with the driver's own message, before anything is
	// received or taken: the packets are all still there afterwards.
	if msg := panicOf(func() { e.rx.Poll(8, nil) }); msg == "" {
		t.Errorf("poll: Poll(8, nil) did not panic; a nil handler is the caller's bug and must panic")
	} else if !strings.Contains(msg, "nil") || strings.Contains(msg, "runtime error") {
		t.Errorf("poll: Poll(8, nil) panicked with %q; want the driver's message naming the nil handler, not a runtime error", msg)
	}
	if msg := panicOf(func() { e.tx.Xmit(nil, false) }); msg == "" || !strings.Contains(msg, "nil") || strings.Contains(msg, "runtime error") {
		t.Errorf("poll: Xmit(nil) gave panic %q; want a panic with the driver's message naming the nil buffer", msg)
	}
	freed := e.alloc(4)
	freed.Put(4)
	e.tx.Cache().Free(freed)
	if msg := panicOf(func() { e.tx.Xmit(freed, true) }); !strings.Contains(msg, "Xmit of a freed") {
		t.Errorf("poll: Xmit of a freed buffer gave panic %q; want a panic with the driver's message naming the freed buffer (netdev.BadXmit), before the buffer is queued", msg)
	}
	if err := e.rx.Wait(deliverWait); err != nil {
		t.Errorf("poll: Wait with packets still waiting returned %v; want nil", err)
	}
	if err := e.rx.Wait(0); err != nil {
		t.Errorf("poll: Wait(0) with packets waiting returned %v; want nil", err)
	}
	recs := e.pollSync(total, 3, false) // checks n <= budget on every call
	if err := e.rx.Wait(0); !errors.Is(err, netdev.ErrTimeout) {
		t.Errorf("poll: Wait(0) on an idle device returned %v; want ErrTimeout at once", err)
	}
	e.sendBurst(total+1, 4, e.small, true)
	e.checkDelivery("poll: 4 packets polled with a budget of 1", e.pollSync(4, 1, false),
		delivery{sent: total + 5, optional: seqs(0, total+1)})
	e.checkDelivery(fmt.Sprintf("poll: %d packets polled with a budget of 3", total), recs, delivery{sent: total})

	e.expectTimeout("poll: Wait after every packet was polled")

	// Wait wakes when a packet arrives. RX belongs to the waiting goroutine
	// until it returns.
	type woke struct {
		err  error
		took time.Duration
	}
	wokec := make(chan woke, 1)
	go func() {
		start := time.Now()
		err := e.rx.Wait(deliverWait)
		wokec <- woke{err, time.Since(start)}
	}()
	time.Sleep(20 * time.Millisecond)
	e.sendBurst(total, 1, e.small, false)
	if w := <-wokec; w.err != nil {
		t.Errorf("poll: Wait(%v), with a packet sent 20ms into it, returned %v after %v; want nil as soon as the packet arrives", deliverWait, w.err, w.took)
	}
	e.checkDelivery("poll: a packet sent while Wait slept", e.pollSync(1, 8, false), delivery{sent: total + 1, optional: seqs(0, total)})
	e.expectTimeout("poll: Wait after that packet was polled")

	errc := make(chan error, 1)
	go func() { errc <- e.rx.Wait(-1) }()
	time.Sleep(20 * time.Millisecond)
	if err := e.rx.Close(); err != nil {
		t.Errorf("poll: RX.Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("poll: Wait(-1), woken by Close from another goroutine, returned %v; want an error matching net.ErrClosed", err)
		}
	case <-time.After(deliverWait):
		t.Fatalf("poll: Wait(-1) had not returned %v after another goroutine closed the device", deliverWait)
	}
}

func testClosed(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	devs := []struct {
		name string
		dev  netdev.Device
	}{{"TX", e.tx}, {"RX", e.rx}}
	for _, d := range devs {
		if err := d.dev.Close(); err != nil {
			t.Errorf("%s.Close: %v", d.name, err)
		}
	}
	for _, d := range devs {
		closed := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("closed: %s.%s after Close returned %v; want an error matching net.ErrClosed", d.name, op, err)
			}
		}
		before := d.dev.Stats()
		for _, more := range []bool{false, true} {
			b, err := e.p.Alloc(64)
			if err != nil {
				t.Fatal(err)
			}
			b.Put(64)
			closed(fmt.Sprintf("Xmit(more=%v)", more), d.dev.Xmit(b, more))
			if b.IsLive() {
				t.Errorf("closed: %s.Xmit after Close did not free the packet", d.name)
			}
		}
		if n := statsDelta(d.dev, before).TxDropped[netdev.DropClosed]; n != 2 {
			t.Errorf("closed: two Xmits after Close added %d to %s's tx_dropped_closed; want 2", n, d.name)
		}
		closed("Flush", d.dev.Flush())
		calls := 0
		n, err := d.dev.Poll(8, func(b *skb.Buff) { calls++; b.Free() })
		closed("Poll(8)", err)
		if n != 0 || calls != 0 {
			t.Errorf("closed: %s.Poll after Close returned %d and called the handler %d times", d.name, n, calls)
		}
		closed("Wait(10ms)", d.dev.Wait(10*time.Millisecond))
		errc := make(chan error, 1)
		go func() { errc <- d.dev.Wait(-1) }()
		select {
		case err := <-errc:
			closed("Wait(-1)", err)
		case <-time.After(deliverWait):
			t.Fatalf("closed: %s.Wait(-1) after Close had not returned after %v", d.name, deliverWait)
		}
		closed("Close", d.dev.Close())
		d.dev.Stats()
	}
}

// closeWait bounds how long Close called from a Poll handler may take.
const closeWait = 250 * time.Millisecond

// closeInPollRounds is how many rounds the close in poll subtest runs.
const closeInPollRounds = 10

func testCloseInPoll(t *testing.T, s *suite) {
	for round := range closeInPollRounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) { closeInPollRound(t, s) })
	}
}

func closeInPollRound(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	const count = 8
	e.sendBurst(0, count, e.small, true)
	if err := e.rx.Wait(deliverWait); err != nil {
		t.Fatalf("close in poll: RX.Wait(%v) with %d packets sent: %v", deliverWait, count, err)
	}
	// Stats from another goroutine meanwhile (safe for concurrent use):
	// the device must still be torn down when the last call leaves it.
	stop := make(chan struct{})
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		for {
			select {
			case <-stop:
				return
			default:
				e.rx.Stats()
			}
		}
	}()
	calls := 0
	var cerr error
	var took time.Duration
	var kept *skb.Buff
	n, err := e.rx.Poll(count, func(b *skb.Buff) {
		calls++
		if calls == 1 {
			kept = b
			t0 := time.Now()
			cerr = e.rx.Close()
			took = time.Since(t0)
			return
		}
		b.Free()
	})
	// The owner frees what it kept into the closed device's Cache, as
	// Device.Cache allows, while Stats still runs: the device's release
	// must not run on Stats' goroutine and close the Cache under it.
	e.rx.Cache().Free(kept)
	close(stop)
	<-statsDone
	if calls != 1 || n != 1 {
		t.Errorf("close in poll: the handler closed RX at its first packet; Poll returned %d and called it %d times, want 1 and 1", n, calls)
	}
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("close in poll: Poll, closed by its handler, returned %v; want an error matching net.ErrClosed", err)
	}
	if cerr != nil {
		t.Errorf("close in poll: RX.Close from the handler returned %v; want nil", cerr)
	}
	if took > closeWait {
		t.Errorf("close in poll: RX.Close from the handler took %v; want at most %v (it must not wait for the Poll it is called from)", took, closeWait)
	}
	if err := e.rx.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("close in poll: a second RX.Close returned %v; want an error matching net.ErrClosed", err)
	}
}

// closeRounds is how many rounds the close race runs.
const closeRounds = 8

func testCloseRace(t *testing.T, s *suite) {
	for round := range closeRounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			e := open(t, s, netdev.Config{}, true)
			e.sendBurst(0, 16, e.small, true)
			delay := time.Duration(rand.IntN(300)) * time.Microsecond
			closed := make(chan error, 1)
			go func() {
				time.Sleep(delay)
				closed <- e.rx.Close()
			}()
			deadline := time.Now().Add(deliverWait)
			for {
				n, err := e.rx.Poll(4, func(b *skb.Buff) { b.Free() })
				if err == nil && n == 0 {
					err = e.rx.Wait(time.Millisecond)
					if errors.Is(err, netdev.ErrTimeout) {
						err = nil
					}
				}
				if err != nil {
					if !errors.Is(err, net.ErrClosed) {
						t.Fatalf("close race: RX returned %v while another goroutine closed it; want an error matching net.ErrClosed", err)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("close race: RX's Poll and Wait had not returned net.ErrClosed %v after another goroutine's Close", deliverWait)
				}
			}
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("close race: RX.Close from another goroutine returned %v; want nil", err)
				}
			case <-time.After(deliverWait):
				t.Fatalf("close race: RX.Close had not returned after %v", deliverWait)
			}
		})
	}
}

// xmitInPollWait is how long testXmitInPoll waits for its Polls before it
// takes the driver to be deadlocked.
const xmitInPollWait = 20 * time.Second

func testXmitInPoll(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	const n = 8
	e.sendBurst(0, n, e.small, true)
	st0 := e.rx.Stats()
	done := make(chan int, 1)
	go func() {
		got := 0
		c := e.rx.Cache()
		deadline := time.Now().Add(5 * time.Second)
		for got < n && time.Now().Before(deadline) {
			k, err := e.rx.Poll(n, func(b *skb.Buff) {
				if _, _, ok := e.pair.Seq(b); !ok {
					c.Free(b) // another's (a link's neighbour discovery)
					return
				}
				got++
				e.rx.Xmit(b, true) // takes b, also on error
				e.rx.Flush()
			})
			if err != nil {
				break
			}
			if k == 0 {
				e.rx.Wait(10 * time.Millisecond)
			}
		}
		done <- got
	}()
	var got int
	select {
	case got = <-done:
	case <-time.After(xmitInPollWait):
		// Not a panic: the test's cleanups would run first, and a Close
		// that takes the same lock would hang them, the reason unsaid.
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "--- FAIL: %s\nnetdevtest: xmit in poll: RX's Poll, whose handler calls RX.Xmit and RX.Flush, has not returned after %v: does the driver hold a lock across the handler that Xmit or Flush takes? An echo server or a forwarder transmits from its handler. The goroutines:\n\n%s\n", t.Name(), xmitInPollWait, buf)
		os.Exit(2)
	}
	if min := n - map[bool]int{true: 1}[e.pair.Lossy]; got < min {
		t.Fatalf("xmit in poll: %d of the %d packets sent arrived within 5s", got, n)
	}
	d := e.rx.Stats().Sub(st0)
	if out := d.TxPackets + d.TxDroppedTotal(); out != uint64(got) {
		t.Errorf("xmit in poll: RX's handler gave RX.Xmit %d packets; its tx_packets grew by %d and tx_dropped by %d, %d in all", got, d.TxPackets, d.TxDroppedTotal(), out)
	}
}

func testAllocs(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, false)
	const batch = 64
	pls := [2]int{min(64, e.pair.MaxPayload), min(1000, e.pair.MaxPayload)}
	fill, tx, rx, rc := e.pair.Fill, e.tx, e.rx, e.rx.Cache()
	var seq uint32
	var got, lost, cycles int
	var xerr, perr error
	h := func(b *skb.Buff) { got++; rc.Free(b) }
	cycle := func() {
		c := tx.Cache()
		for i := range batch {
			pl := pls[i&1]
			b, err := c.Alloc(pl + FillSlack)
			if err != nil {
				xerr = err
				return
			}
			fill(b, seq, pl)
			seq++
			if err := tx.Xmit(b, true); err != nil && xerr == nil {
				xerr = err
			}
		}
		if err := tx.Flush(); err != nil && xerr == nil {
			xerr = err
		}
		got = 0
		for waits := 0; got < batch && waits < 20; {
			n, err := rx.Poll(batch-got, h)
			if err != nil {
				perr = err
				return
			}
			if n == 0 {
				waits++
				if err := rx.Wait(10 * time.Millisecond); err != nil && !errors.Is(err, netdev.ErrTimeout) {
					perr = err
					return
				}
			}
		}
		lost += batch - got
		if err := rx.Wait(50 * time.Microsecond); err == nil || !errors.Is(err, netdev.ErrTimeout) {
			perr = fmt.Errorf("Wait(50µs) on a drained device: %w", err)
		}
		cycles++
	}
	for range 3 {
		cycle() // warm up: caches, rings, timers
	}
	allocs := testing.AllocsPerRun(20, cycle)
	if xerr != nil || perr != nil {
		t.Fatalf("allocs: transmit error %v, receive error %v", xerr, perr)
	}
	if allocs != 0 {
		t.Errorf("allocs: a steady-state cycle (allocate, fill and Xmit %d packets of %d and %d bytes of payload, Flush, Poll them back, free them) allocated %.1f times; want 0",
			batch, pls[0], pls[1], allocs)
	}
	allowed := 0
	if e.pair.Lossy {
		allowed = max(1, int(LossyFraction*float64(cycles*batch)))
	}
	if lost > allowed {
		t.Errorf("allocs: %d of %d packets lost; allowed %d", lost, cycles*batch, allowed)
	}
}

func testPollInPoll(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	const count = 8
	e.sendBurst(0, count, e.small, true)
	if err := e.rx.Wait(deliverWait); err != nil {
		t.Fatalf("poll in poll: RX.Wait(%v) with %d packets sent: %v", deliverWait, count, err)
	}
	var got any
	inner := 0
	func() {
		defer func() { got = recover() }()
		e.rx.Poll(count, func(b *skb.Buff) {
			b.Free()
			e.rx.Poll(count, func(b *skb.Buff) {
				inner++
				b.Free()
			})
		})
	}()
	msg, _ := got.(string)
	if !strings.Contains(msg, "Poll called while a Poll of the same device runs") {
		t.Errorf("poll in poll: a handler calling RX.Poll: recovered %v; want netdev.NestedPoll's panic", got)
	}
	if inner != 0 {
		t.Errorf("poll in poll: the nested Poll handed %d packets over; want none", inner)
	}
	if err := e.rx.Close(); err != nil && !errors.Is(err, pool.ErrLeak) {
		t.Errorf("poll in poll: RX.Close after the panic: %v", err)
	}
}

func testPanicInHandler(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	const count = 16
	e.sendBurst(0, count, e.small, true)
	if err := e.rx.Wait(deliverWait); err != nil {
		t.Fatalf("panic in handler: RX.Wait(%v) with %d packets sent: %v", deliverWait, count, err)
	}
	got := map[uint32]int{}
	take := func(b *skb.Buff) {
		if seq, _, ok := e.pair.Seq(b); ok {
			got[seq]++
		}
		b.Free()
	}
	func() {
		defer func() {
			// nil: the first Poll brought fewer than four (a ring
			// whose first block retired early); the rest holds.
			if r := recover(); r != nil && r != "handler panics" {
				panic(r)
			}
		}()
		n := 0
		e.rx.Poll(count, func(b *skb.Buff) {
			take(b)
			if n++; n == 4 {
				panic("handler panics")
			}
		})
	}()
	// Wait first: a driver that refills its receive ring there with the
	// buffers freed before the panic must not find their packets again.
	deadline := time.Now().Add(deliverWait)
	for len(got) < count && time.Now().Before(deadline) {
		if err := e.rx.Wait(10 * time.Millisecond); err != nil && !errors.Is(err, netdev.ErrTimeout) {
			t.Fatalf("panic in handler: RX.Wait after a handler's panic: %v", err)
		}
		if _, err := e.rx.Poll(count, take); err != nil {
			t.Fatalf("panic in handler: RX.Poll after a handler's panic: %v", err)
		}
	}
	for seq, n := range got {
		if n > 1 {
			t.Errorf("panic in handler: packet %d handed over %d times", seq, n)
		}
	}
	if len(got) < count && !e.pair.Lossy {
		t.Errorf("panic in handler: %d of %d packets handed over", len(got), count)
	}
}

// testOverrun sends 16 rings' worth without polling: a non-Lossy device
// delivers each packet or counts its drop, never loses one silently:
// delivered + RX's rx_dropped + TX's tx_dropped = sent, and what arrives
// is in order, once, intact. Then the device recovers.
func testOverrun(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	ring := e.tx.TxAvail()
	n := 16 * ring
	tx0, rx0 := e.tx.Stats(), e.rx.Stats()
	for seq := 0; seq < n; seq += ring {
		e.sendBurst(uint32(seq), ring, e.small, true)
	}
	recs := e.drain()
	e.checkDelivery("overrun", recs, delivery{sent: n, optional: seqs(0, uint32(n))})
	dtx, drx := statsDelta(e.tx, tx0), statsDelta(e.rx, rx0)
	got := 0
	for _, r := range recs {
		if r.ok {
			got++
		}
	}
	if sum := uint64(got) + drx.RxDroppedTotal() + dtx.TxDroppedTotal(); !e.pair.Lossy && sum != uint64(n) {
		t.Errorf("overrun: %d packets sent without polling: %d delivered, RX rx_dropped %v, TX tx_dropped %d; want them to add up to %d (a drop must be counted)",
			n, got, drx.RxDropped, dtx.TxDroppedTotal(), n)
	}
	e.sendBurst(uint32(n), 1, e.small, false)
	e.checkDelivery("overrun: a packet after the overrun", e.pollSync(1, 8, false),
		delivery{sent: n + 1, optional: seqs(0, uint32(n))})
}

// testExhausted runs RX with the pool exhausted: every packet is delivered
// or dropped and counted (or left queued, Poll returning pool.ErrExhausted),
// no buffer leaks, and traffic flows again once buffers are freed.
func testExhausted(t *testing.T, s *suite) {
	pc := s.pc
	if pc.Classes == nil {
		pc.Classes = pool.DefaultClasses()
	}
	pc.Classes = append([]pool.Class(nil), pc.Classes...)
	for i := range pc.Classes {
		if pc.Classes[i].Max == 0 {
			pc.Classes[i].Max = 1024
		}
	}
	e := open(t, &suite{f: s.f, pc: pc}, netdev.Config{}, true)
	const count = 16
	pl := min(1000, e.pair.MaxPayload)
	bufs := make([]*skb.Buff, count)
	for i := range bufs {
		bufs[i] = e.build(uint32(i), pl)
	}
	var held []*skb.Buff
	for _, c := range pc.Classes {
		for {
			b, err := e.p.Alloc(c.Size - e.p.Headroom())
			if err != nil {
				break
			}
			held = append(held, b)
		}
	}
	rx0 := e.rx.Stats()
	for i, b := range bufs {
		if err := e.tx.Xmit(b, i < count-1); err != nil {
			t.Fatalf("pool exhausted: Xmit(seq %d): %v", i, err)
		}
	}
	var recs []rxRec
	var scratch []byte
	h := func(b *skb.Buff) { recs = append(recs, e.inspect(b, &scratch)); b.Free() }
	for range 20 {
		if _, err := e.rx.Poll(count, h); err != nil && !errors.Is(err, pool.ErrExhausted) {
			t.Fatalf("pool exhausted: Poll: %v", err)
		}
		e.rx.Wait(time.Millisecond)
	}
	for _, b := range held {
		b.Free()
	}
	recs = append(recs, e.drain()...)
	e.checkDelivery("pool exhausted", recs, delivery{sent: count, optional: seqs(0, count)})
	if d := statsDelta(e.rx, rx0); !e.pair.Lossy && uint64(len(recs))+d.RxDroppedTotal() != count {
		t.Errorf("pool exhausted: %d packets sent: %d delivered, rx_dropped %v; want them to add up to %d", count, len(recs), d.RxDropped, count)
	}
	e.sendBurst(count, 1, e.small, false)
	e.checkDelivery("pool exhausted: a packet after buffers came back", e.pollSync(1, 8, false),
		delivery{sent: count + 1, optional: seqs(0, count)})
}

// testWaitWakes has RX's owner Wait and Poll while TX sends packets one by
// one: a Wait that returns nil promises a packet, so the Poll after it
// hands at least one over.
func testWaitWakes(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	const total = 3000
	done := make(chan [2]int)
	var polled atomic.Int64
	go func() {
		got, spurious := 0, 0
		deadline := time.Now().Add(deliverWait)
		for got < total && time.Now().Before(deadline) {
			err := e.rx.Wait(20 * time.Millisecond)
			n, perr := e.rx.Poll(64, func(b *skb.Buff) { b.Free() })
			if perr != nil {
				break
			}
			if err == nil && n == 0 {
				spurious++
			}
			got += n
			polled.Store(int64(got))
		}
		done <- [2]int{got, spurious}
	}()
	deadline := time.Now().Add(deliverWait)
	for i := range total {
		for int64(i)-polled.Load() > 64 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		e.sendBurst(uint32(i), 1, e.small, false)
		if i%7 == 0 {
			runtime.Gosched()
		}
	}
	r := <-done
	if r[1] > 0 {
		t.Errorf("wait wakes: Wait returned nil %d times with nothing for the Poll after it (%d of %d packets received)", r[1], r[0], total)
	}
}

// drain polls RX until a Wait of 50 ms finds nothing more, and returns what
// it got.
func (e *env) drain() []rxRec {
	e.t.Helper()
	var recs []rxRec
	var scratch []byte
	c := e.rx.Cache()
	h := func(b *skb.Buff) { recs = append(recs, e.inspect(b, &scratch)); c.Free(b) }
	for deadline := time.Now().Add(deliverWait); time.Now().Before(deadline); {
		n, err := e.rx.Poll(64, h)
		if err != nil {
			e.t.Fatalf("RX.Poll(64): %v", err)
		}
		if n == 0 && errors.Is(e.rx.Wait(50*time.Millisecond), netdev.ErrTimeout) {
			break
		}
	}
	return recs
}

// testClosedPeer closes RX and has TX send on: whatever Xmit and Flush
// return (a socket may report the peer gone), every packet is counted once
// in TX's tx_packets or tx_dropped, and freed (checked when TX closes).
func testClosedPeer(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	if err := e.rx.Close(); err != nil {
		t.Fatalf("closed peer: RX.Close: %v", err)
	}
	const n = 12
	before := e.tx.Stats()
	for i := range n {
		e.tx.Xmit(e.build(uint32(i), e.small(0)), i%4 != 3)
	}
	e.tx.Flush()
	if d := statsDelta(e.tx, before); d.TxPackets+d.TxDroppedTotal() != n {
		t.Errorf("closed peer: %d packets sent to a closed peer: tx_packets grew by %d, tx_dropped by %d; want them to add up to %d",
			n, d.TxPackets, d.TxDroppedTotal(), n)
	}
}

// testBusyPoll checks netdev.BusyPoller's contract on a device that has
// it.
func testBusyPoll(t *testing.T, s *suite) {
	e := open(t, s, netdev.Config{}, true)
	bp, ok := e.rx.(netdev.BusyPoller)
	if !ok {
		t.Skipf("busy poll: the driver's %T does not implement netdev.BusyPoller", e.rx)
	}
	c := e.rx.Cache()
	calls := 0
	count := func(b *skb.Buff) { calls++; c.Free(b) }
	if msg := panicOf(func() { bp.BusyPoll(1, nil, 0) }); msg == "" || !strings.Contains(msg, "nil") || strings.Contains(msg, "runtime error") {
		t.Errorf("busy poll: BusyPoll(1, nil, 0) gave panic %q; want a panic with the driver's message naming the nil handler", msg)
	}
	start := time.Now()
	if n, err := bp.BusyPoll(8, count, 0); n != 0 || err != nil || calls != 0 {
		t.Errorf("busy poll: BusyPoll(8, h, 0) on an idle device: %d, %v, handler called %d times; want 0, nil, none", n, err, calls)
	}
	if took := time.Since(start); took > deliverWait {
		t.Errorf("busy poll: BusyPoll(8, h, 0) on an idle device took %v; a zero timeout looks once", took)
	}
	const spin = 20 * time.Millisecond
	start = time.Now()
	n, err := bp.BusyPoll(8, count, spin)
	took := time.Since(start)
	if n != 0 || err != nil || calls != 0 {
		t.Errorf("busy poll: BusyPoll(8, h, %v) on an idle device: %d, %v, handler called %d times; want 0, nil, none", spin, n, err, calls)
	}
	if took < spin || took > spin+deliverWait {
		t.Errorf("busy poll: BusyPoll(8, h, %v) on an idle device returned after %v; want no sooner than its timeout, and within %v of it", spin, took, deliverWait)
	}

	const total = 20
	e.sendBurst(0, total, e.small, true)
	if n, err := bp.BusyPoll(0, count, deliverWait); n != 0 || err != nil || calls != 0 {
		t.Errorf("busy poll: BusyPoll(0, h, %v) with packets sent: %d, %v, handler called %d times; a budget of 0 hands none over", deliverWait, n, err, calls)
	}
	if n, err := bp.BusyPoll(-1, count, deliverWait); n != 0 || err != nil || calls != 0 {
		t.Errorf("busy poll: BusyPoll(-1, h, %v) with packets sent: %d, %v, handler called %d times; a negative budget hands none over", deliverWait, n, err, calls)
	}
	var recs []rxRec
	var scratch []byte
	keep := func(b *skb.Buff) { recs = append(recs, e.inspect(b, &scratch)); c.Free(b) }
	for deadline := time.Now().Add(deliverWait); len(recs) < total && time.Now().Before(deadline); {
		before := len(recs)
		n, err := bp.BusyPoll(3, keep, deliverWait)
		if err != nil {
			t.Fatalf("busy poll: BusyPoll(3, h, %v) with packets sent: %v", deliverWait, err)
		}
		if n != len(recs)-before || n > 3 {
			t.Fatalf("busy poll: BusyPoll(3, h, %v) returned %d and called the handler %d times; want the same count, at most the budget", deliverWait, n, len(recs)-before)
		}
	}
	e.checkDelivery(fmt.Sprintf("busy poll: %d packets busy-polled with a budget of 3", total), recs, delivery{sent: total})

	// A packet sent while BusyPoll spins is handed over by that call.
	type got struct {
		n    int
		err  error
		took time.Duration
	}
	gotc := make(chan got, 1)
	recs = recs[:0]
	go func() {
		start := time.Now()
		n, err := bp.BusyPoll(8, keep, -1)
		gotc <- got{n, err, time.Since(start)}
	}()
	time.Sleep(20 * time.Millisecond)
	e.sendBurst(total, 1, e.small, false)
	select {
	case g := <-gotc:
		if g.err != nil || g.n != 1 {
			t.Errorf("busy poll: BusyPoll(8, h, -1), with a packet sent 20 ms into it, returned %d, %v after %v; want 1, nil", g.n, g.err, g.took)
		}
	case <-time.After(deliverWait):
		e.rx.Close() // ends the spin, so the test can report
		t.Fatalf("busy poll: BusyPoll(8, h, -1) had not returned %v after a packet was sent to it", deliverWait)
	}
	e.checkDelivery("busy poll: a packet sent while BusyPoll spun", recs, delivery{sent: total + 1, optional: seqs(0, total)})

	// Close from another goroutine ends a BusyPoll without limit.
	errc := make(chan error, 1)
	go func() {
		_, err := bp.BusyPoll(8, count, -1)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := e.rx.Close(); err != nil {
		t.Errorf("busy poll: RX.Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("busy poll: BusyPoll(8, h, -1), ended by Close from another goroutine, returned %v; want an error matching net.ErrClosed", err)
		}
	case <-time.After(deliverWait):
		t.Fatalf("busy poll: BusyPoll(8, h, -1) had not returned %v after another goroutine closed the device", deliverWait)
	}
	if n, err := bp.BusyPoll(8, count, -1); n != 0 || !errors.Is(err, net.ErrClosed) {
		t.Errorf("busy poll: BusyPoll after Close: %d, %v; want 0 and an error matching net.ErrClosed", n, err)
	}
}
