package netdevtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// FillSlack is the tailroom, beyond the payload, of the buffers the suite
// gives Pair.Fill: room for the packet's headers, in bytes.
const FillSlack = 256

// LossyFraction is the fraction of packets a Lossy pair may lose in any
// subtest (with at least one packet always allowed).
const LossyFraction = 0.02

// Waits of the suite: how long it gives packets to arrive before it calls
// them lost (deliverWait), and how long a Lossy pair gets before the suite
// moves on after a burst (lossyWait: long enough for a stalled receiver on
// a loaded machine, which must not read as loss; it is spent only when
// packets are lost).
const (
	deliverWait = 5 * time.Second
	lossyWait   = time.Second
)

// PutPayload writes seq (big-endian) into p's first four bytes and a pattern
// derived from seq and the offset into the rest: it differs from byte to byte
// (unlike the pool's poison or a zeroed block), and in every byte position
// between packets whose sequence numbers differ only in their low byte, such
// as neighbours in a burst. Fill functions may use it for the payload. p must
// hold at least 4 bytes.
func PutPayload(p []byte, seq uint32) {
	binary.BigEndian.PutUint32(p, seq)
	s := byte(seq)*31 ^ byte(seq>>8)*7 ^ byte(seq>>16)
	for i := 4; i < len(p); i++ {
		p[i] = byte(i) ^ byte(i>>8)*13 ^ s
	}
}

// env is one subtest's pool and pair.
type env struct {
	t        *testing.T
	cfg      netdev.Config // as given to the factory, Pool included
	p        *pool.Pool
	debug    bool
	pair     *Pair
	tx, rx   netdev.Device
	overhead int // bytes Fill adds to the payload

	recv     *receiver // running receiver, if any
	finished bool

	mu   sync.Mutex // guards sent: the receiver reads it on its goroutine
	sent map[uint32]sentPkt
}

// sentPkt is what the suite remembers of a packet it built.
type sentPkt struct {
	payload int
	crc     uint32 // CRC-32 of the payload bytes
}

// open makes the subtest's pool and pair. debug selects the pool's debug
// mode (allocation sites, double-free panics). The pair is closed and the
// pool checked for leaks when the subtest ends.
func open(t *testing.T, s *suite, cfg netdev.Config, debug bool) *env {
	t.Helper()
	pc := s.pc
	pc.Debug, pc.Name = debug, t.Name()
	p, err := pool.New(pc)
	if err != nil {
		t.Fatalf("netdevtest: make the pool: %v", err)
	}
	cfg.Pool = p
	e := &env{t: t, cfg: cfg, p: p, debug: debug, sent: make(map[uint32]sentPkt)}
	// Registered before the factory's cleanups, so it runs after them: it
	// closes the pool when the factory skipped or failed.
	t.Cleanup(e.finish)
	pair := s.f(t, cfg)
	if pair != nil {
		e.tx, e.rx = pair.TX, pair.RX // closed by finish, whatever else is wrong
	}
	switch {
	case pair == nil:
		t.Fatal("factory returned a nil Pair")
	case pair.TX == nil || pair.RX == nil:
		t.Fatalf("factory returned a Pair without devices (TX %v, RX %v)", pair.TX, pair.RX)
	case pair.Fill == nil || pair.Seq == nil:
		t.Fatal("factory returned a Pair without Fill or Seq")
	case pair.MaxPayload < 4:
		t.Fatalf("Pair.MaxPayload is %d, want at least 4", pair.MaxPayload)
	}
	e.pair = pair
	// Runs before the factory's cleanups: the devices close while what they
	// run on still exists.
	t.Cleanup(e.finish)
	e.measure()
	return e
}

// measure finds the bytes Fill adds to a payload and checks that Seq reads
// back what Fill wrote.
func (e *env) measure() {
	t := e.t
	t.Helper()
	b := e.alloc(4)
	e.pair.Fill(b, 0x01020304, 4)
	e.overhead = b.Len() - 4
	seq, pl, ok := e.pair.Seq(b)
	end := append([]byte(nil), b.Data()[max(0, b.HeadLen()-4):]...)
	e.tx.Cache().Free(b)
	switch {
	case e.overhead < 0:
		t.Fatalf("Fill(seq, payload 4) made a packet of %d bytes, shorter than its payload", e.overhead+4)
	case !ok || seq != 0x01020304 || pl != 4:
		t.Fatalf("Seq on a packet Fill just wrote (seq 0x01020304, payload 4) returned seq %#x payload %d ok %v", seq, pl, ok)
	case len(end) != 4 || binary.BigEndian.Uint32(end) != 0x01020304:
		t.Fatalf("Fill(seq 0x01020304, payload 4) does not end the packet with its payload: last bytes % x", end)
	}
}

// alloc returns an empty buffer from TX's cache with room for payload.
func (e *env) alloc(payload int) *skb.Buff {
	e.t.Helper()
	b, err := e.tx.Cache().Alloc(payload + FillSlack)
	if err != nil {
		e.t.Fatalf("allocate a %d-byte transmit buffer from TX.Cache(): %v", payload+FillSlack, err)
	}
	return b
}

// build returns a packet carrying seq and payload bytes of payload, and
// remembers its payload for the receive-side checks.
func (e *env) build(seq uint32, payload int) *skb.Buff {
	e.t.Helper()
	b := e.alloc(payload)
	e.pair.Fill(b, seq, payload)
	n, hl := b.Len(), b.HeadLen()
	if n < payload || hl != n {
		e.t.Fatalf("Fill(seq %d, payload %d) made a packet of %d bytes (%d linear)", seq, payload, n, hl)
	}
	p := b.Data()[n-payload:]
	if binary.BigEndian.Uint32(p) != seq {
		e.t.Fatalf("Fill(seq %d, payload %d): the packet does not end with the payload (bytes at Len-payload: % x)", seq, payload, p[:4])
	}
	e.mu.Lock()
	e.sent[seq] = sentPkt{payload: payload, crc: crc32.ChecksumIEEE(p)}
	e.mu.Unlock()
	return b
}

// send builds packet seq and transmits it. It returns the packet's length
// and Xmit's error.
func (e *env) send(seq uint32, payload int, more bool) (int, error) {
	e.t.Helper()
	b := e.build(seq, payload)
	n := b.Len()
	return n, e.tx.Xmit(b, more)
}

// sendBurst transmits count packets from seq on with more=true, then ends
// the burst with more=false on the last (flush false) or with Flush (flush
// true). Every error fails the test. It returns the bytes sent.
func (e *env) sendBurst(seq uint32, count int, payload func(seq uint32) int, flush bool) int {
	e.t.Helper()
	bytes := 0
	for i := range count {
		s := seq + uint32(i)
		more := flush || i < count-1
		n, err := e.send(s, payload(s), more)
		if err != nil {
			e.t.Fatalf("Xmit(seq %d, %d bytes, more=%v), packet %d of a burst of %d: %v", s, n, more, i+1, count, err)
		}
		bytes += n
	}
	if flush {
		if err := e.tx.Flush(); err != nil {
			e.t.Fatalf("Flush after a burst of %d: %v", count, err)
		}
	}
	return bytes
}

// rxRec is what the suite saw of one packet handed to a handler.
type rxRec struct {
	buf      *skb.Buff // only while the suite keeps the buffer
	seq      uint32
	payload  int
	ok       bool // Seq recognised it as the suite's
	n        int  // Len
	headroom int
	end      int
	bad      string // what is wrong with it, "" when intact
}

// inspect records b, checking its payload against what was sent. scratch is
// the caller's, for linearising a nonlinear packet.
func (e *env) inspect(b *skb.Buff, scratch *[]byte) rxRec {
	r := rxRec{n: b.Len(), headroom: b.Headroom(), end: b.End()}
	r.seq, r.payload, r.ok = e.pair.Seq(b)
	if !r.ok {
		return r
	}
	e.mu.Lock()
	sp, known := e.sent[r.seq]
	e.mu.Unlock()
	switch {
	case !known:
		r.bad = fmt.Sprintf("seq %d was never sent (packet of %d bytes)", r.seq, r.n)
		return r
	case r.payload != sp.payload:
		r.bad = fmt.Sprintf("seq %d: Seq reports a payload of %d bytes, %d were sent", r.seq, r.payload, sp.payload)
		return r
	case r.payload > r.n:
		r.bad = fmt.Sprintf("seq %d: payload of %d bytes in a packet of %d", r.seq, r.payload, r.n)
		return r
	}
	data := b.Data()
	if b.IsNonlinear() {
		if cap(*scratch) < r.n {
			*scratch = make([]byte, r.n)
		}
		data = (*scratch)[:r.n]
		if err := b.CopyBits(0, data); err != nil {
			r.bad = fmt.Sprintf("seq %d: CopyBits of its %d bytes: %v", r.seq, r.n, err)
			return r
		}
	}
	// The payload ends the packet as sent; a path that pads short frames
	// may have added bytes after it.
	for off := r.n - r.payload; off >= 0 && off >= r.n-r.payload-64; off-- {
		p := data[off : off+r.payload]
		if binary.BigEndian.Uint32(p) == r.seq && crc32.ChecksumIEEE(p) == sp.crc {
			return r
		}
	}
	p := data[r.n-r.payload:]
	r.bad = fmt.Sprintf("seq %d: payload of %d bytes corrupted (first bytes % x)", r.seq, r.payload, p[:min(len(p), 16)])
	return r
}

// receiver polls RX on its own goroutine, as a driver's user would, and
// records every packet. The test goroutine reads its records under mu.
type receiver struct {
	e      *env
	budget int
	stop   atomic.Bool
	done   chan struct{}

	mu    sync.Mutex
	recs  []rxRec
	mine  int    // records Seq recognised
	top   uint32 // highest seq recognised, valid when mine > 0
	err   error  // first unexpected error of Poll or Wait
	polls int

	reported bool // err was reported (test goroutine only)
}

// startReceiver starts polling RX with the given budget. The receiver owns
// RX until stopReceiver.
func (e *env) startReceiver(budget int) *receiver {
	r := &receiver{e: e, budget: budget, done: make(chan struct{})}
	e.recv = r
	go r.run()
	return r
}

func (r *receiver) run() {
	defer close(r.done)
	e := r.e
	c := e.rx.Cache()
	var scratch []byte
	var batch []rxRec
	h := func(b *skb.Buff) {
		batch = append(batch, e.inspect(b, &scratch))
		c.Free(b)
	}
	for !r.stop.Load() {
		err := e.rx.Wait(20 * time.Millisecond)
		if err != nil && !errors.Is(err, netdev.ErrTimeout) {
			r.fail(fmt.Errorf("RX.Wait(20ms): %w", err))
			return
		}
		batch = batch[:0]
		n, err := e.rx.Poll(r.budget, h)
		if err != nil {
			r.fail(fmt.Errorf("RX.Poll(%d): %w", r.budget, err))
			return
		}
		if n != len(batch) || n > r.budget {
			r.fail(fmt.Errorf("RX.Poll(%d) returned %d and called the handler %d times; want equal counts, at most the budget", r.budget, n, len(batch)))
		}
		r.mu.Lock()
		r.polls++
		for _, rec := range batch {
			r.recs = append(r.recs, rec)
			if rec.ok {
				if r.mine == 0 || rec.seq > r.top {
					r.top = rec.seq
				}
				r.mine++
			}
		}
		r.mu.Unlock()
	}
}

func (r *receiver) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// count returns how many of the suite's packets arrived, the highest seq
// among them, and the receiver's error.
func (r *receiver) count() (mine int, top uint32, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mine, r.top, r.err
}

// waitFor waits until want of the suite's packets arrived (or, for a Lossy
// pair, until packet last or a later one did, or lossyWait passed). It fails
// the test when a pair that is not Lossy has not delivered them within
// deliverWait.
func (r *receiver) waitFor(want int, last uint32, what string) {
	t := r.e.t
	t.Helper()
	lossy := r.e.pair.Lossy
	limit := deliverWait
	if lossy {
		limit = lossyWait
	}
	deadline := time.Now().Add(limit)
	for {
		mine, top, err := r.count()
		if err != nil {
			r.reported = true
			t.Fatalf("%s: receiver: %v", what, err)
		}
		if mine >= want || lossy && mine > 0 && top >= last {
			return
		}
		if time.Now().After(deadline) {
			if !lossy {
				t.Fatalf("%s: only %d of %d packets arrived within %v: packets lost or stranded", what, mine, want, limit)
			}
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// stopReceiver stops the receiver and returns its records; RX belongs to the
// test goroutine again.
func (e *env) stopReceiver() []rxRec {
	r := e.recv
	if r == nil {
		return nil
	}
	r.stop.Store(true)
	<-r.done
	e.recv = nil
	if r.err != nil && !r.reported {
		e.t.Errorf("receiver: %v", r.err)
	}
	return r.recs
}

// pollSync polls RX on the test goroutine until want of the suite's packets
// arrived or, with nothing arriving, the time limit passed; keep holds the
// buffers (in rec.buf) instead of freeing them into RX.Cache().
func (e *env) pollSync(want, budget int, keep bool) []rxRec {
	e.t.Helper()
	var recs []rxRec
	var scratch []byte
	mine := 0
	c := e.rx.Cache()
	calls := 0
	h := func(b *skb.Buff) {
		calls++
		rec := e.inspect(b, &scratch)
		if rec.ok {
			mine++
		}
		if keep {
			rec.buf = b
		} else {
			c.Free(b)
		}
		recs = append(recs, rec)
	}
	limit := deliverWait
	if e.pair.Lossy {
		limit = lossyWait
	}
	deadline := time.Now().Add(limit)
	for mine < want && time.Now().Before(deadline) {
		calls = 0
		n, err := e.rx.Poll(budget, h)
		if err != nil {
			e.t.Fatalf("RX.Poll(%d): %v", budget, err)
		}
		if n != calls || n > budget {
			e.t.Fatalf("RX.Poll(%d) returned %d and called the handler %d times; want equal counts, at most the budget", budget, n, calls)
		}
		if n == 0 {
			if err := e.rx.Wait(10 * time.Millisecond); err != nil && !errors.Is(err, netdev.ErrTimeout) {
				e.t.Fatalf("RX.Wait(10ms): %v", err)
			}
		}
	}
	return recs
}

// delivery says which packets a check expects: seq 0 to sent-1 were given to
// Xmit; refused ones (Xmit returned an error) must not arrive; optional ones
// may or may not (queued when the device was closed).
type delivery struct {
	sent     int
	refused  map[uint32]bool
	optional map[uint32]bool
}

// checkDelivery reports, as errors of the test, every broken rule in recs:
// every packet expected must arrive once, in order, intact. A Lossy pair may
// lose up to LossyFraction of them.
func (e *env) checkDelivery(what string, recs []rxRec, want delivery) {
	t := e.t
	t.Helper()
	var probs []string
	seen := make(map[uint32]bool)
	last, have := uint32(0), false
	for _, r := range recs {
		if !r.ok {
			continue
		}
		switch {
		case r.bad != "":
			probs = append(probs, r.bad)
		case seen[r.seq]:
			probs = append(probs, fmt.Sprintf("seq %d delivered twice", r.seq))
		case have && r.seq < last:
			probs = append(probs, fmt.Sprintf("seq %d delivered after seq %d (reordered)", r.seq, last))
		case int64(r.seq) >= int64(want.sent) || want.refused[r.seq]:
			probs = append(probs, fmt.Sprintf("seq %d delivered, but Xmit refused it", r.seq))
		}
		seen[r.seq] = true
		if !have || r.seq > last {
			last, have = r.seq, true
		}
	}
	expected, lost, first := 0, 0, -1
	for s := range want.sent {
		q := uint32(s)
		if want.refused[q] || want.optional[q] {
			continue
		}
		expected++
		if !seen[q] {
			lost++
			if first < 0 {
				first = s
			}
		}
	}
	allowed := 0
	if e.pair.Lossy {
		allowed = max(1, int(LossyFraction*float64(expected)))
	}
	if lost > allowed {
		probs = append(probs, fmt.Sprintf("%d of %d packets lost (first seq %d); allowed %d", lost, expected, first, allowed))
	} else if lost > 0 {
		t.Logf("%s: %d of %d packets lost (Lossy pair, %d allowed)", what, lost, expected, allowed)
	}
	report(t, what, probs)
}

// report fails t with the first problems of a list.
func report(t *testing.T, what string, probs []string) {
	t.Helper()
	if len(probs) == 0 {
		return
	}
	const show = 8
	msg := strings.Join(probs[:min(show, len(probs))], "\n\t")
	if len(probs) > show {
		msg += fmt.Sprintf("\n\t... and %d more", len(probs)-show)
	}
	t.Errorf("%s:\n\t%s", what, msg)
}

// finish stops the receiver, closes both devices and checks that the pool
// got every buffer back. It runs once, at the end of the subtest.
func (e *env) finish() {
	if e.finished {
		return
	}
	e.finished = true
	t := e.t
	e.stopReceiver()
	for _, d := range []struct {
		name string
		dev  netdev.Device
	}{{"TX", e.tx}, {"RX", e.rx}} {
		if d.dev == nil {
			continue
		}
		if err := d.dev.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s.Close: %v", d.name, err)
		}
	}
	e.checkLeaks()
}

// checkLeaks fails t when the pool has buffers in flight, naming where they
// were allocated, and closes the pool.
func (e *env) checkLeaks() {
	t := e.t
	t.Helper()
	when := "after both devices were closed"
	if t.Failed() {
		when += " (after an earlier failure, which may have left them)"
	}
	if st := e.p.Stats(); st.InFlight() != 0 {
		msg := fmt.Sprintf("leak: %d buffers still in flight %s\n%s", st.InFlight(), when, st)
		for i, l := range e.p.Outstanding() {
			if i == 5 {
				msg += "\n..."
				break
			}
			msg += fmt.Sprintf("\nbuffer of %d bytes allocated at:\n%s", l.Buff.Len(), l.Site)
		}
		t.Error(msg)
		return
	}
	if live := e.p.Outstanding(); len(live) != 0 {
		t.Errorf("leak: pool.Outstanding lists %d buffers %s; the first was allocated at:\n%s", len(live), when, live[0].Site)
		return
	}
	if err := e.p.Close(); err != nil {
		t.Errorf("pool.Close %s: %v", when, err)
	}
}

// statsDelta returns what the counters of dev grew by since before.
func statsDelta(dev netdev.Device, before netdev.Stats) netdev.Stats {
	return dev.Stats().Sub(before)
}

// payloadSizes returns the payload sizes the suite cycles through: small,
// around the copybreak threshold (counting the bytes Fill adds), around the
// usual MTUs, the largest, and some in between.
func (e *env) payloadSizes() []int {
	mx := e.pair.MaxPayload
	thr := e.cfg.CopybreakThreshold()
	if thr == 0 {
		thr = netdev.DefaultCopybreak
	}
	cands := []int{4, 5, 17, 64, 65,
		thr - e.overhead - 1, thr - e.overhead, thr - e.overhead + 1,
		thr - 1, thr, thr + 1, 511, 1000, 1400, 1472, 4000, 8972, mx - 1, mx}
	// A few fixed pseudo-random sizes (xorshift), the same on every run.
	x := uint32(2463534242)
	for range 4 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		cands = append(cands, 4+int(x%uint32(mx-3)))
	}
	var out []int
	have := make(map[int]bool)
	for _, s := range cands {
		if s >= 4 && s <= mx && !have[s] {
			have[s] = true
			out = append(out, s)
		}
	}
	return out
}
