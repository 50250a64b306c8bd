package traffic

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// goldenStamp is PutStamp's bytes for the stamp of TestStampGolden.
const goldenStamp = "be9be955000012340000000700000000000186a017979cfe362a0000716921e9"

// runGen runs a generator with cfg on d to its end and returns its result;
// any error fails the test.
func runGen(t *testing.T, d netdev.Device, cfg PktgenConfig) PktgenResult {
	t.Helper()
	g, err := NewPktgen(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkSpans fails the test for each interval whose length (secs) is not
// the time from the end of the one before it (the run's start for the
// first) to its own end (ends).
func checkSpans(t *testing.T, ends []time.Duration, secs []float64) {
	t.Helper()
	var prev time.Duration
	for i, end := range ends {
		if d := (end - prev).Seconds(); math.Abs(secs[i]-d) > 1e-9 {
			t.Errorf("interval ending at %v: %.6f s long, want %.6f", end, secs[i], d)
		}
		prev = end
	}
}

// seqRange returns the sequence numbers a to b-1.
func seqRange(a, b uint64) []uint64 {
	var out []uint64
	for v := a; v < b; v++ {
		out = append(out, v)
	}
	return out
}

// TestCounterBoundaries feeds one flow stamps at the edges of the
// Counter's documented rules: a held stamp followed by its 9th next
// stamp and not its 10th, one 64 behind a held stamp and one maxFollow
// ahead of it, a late packet below the flow's first with a gap, and one
// older than the window but within dupWindow below the first.
func TestCounterBoundaries(t *testing.T) {
	cat := func(parts ...[]uint64) []uint64 {
		var out []uint64
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []uint64
		want FlowTotals
	}{
		// A held stamp followed by the 9th stamp after it counts; by the 10th it does not.
		{"held, followed 9th", cat(seqRange(0, 100), []uint64{2100}, seqRange(100, 108), []uint64{2101}), FlowTotals{Packets: 110, Lost: 1992, Flows: 1}},
		{"held, followed 10th", cat(seqRange(0, 100), []uint64{2100}, seqRange(100, 109), []uint64{2101}), FlowTotals{Packets: 111, Flows: 1, Untracked: 2}},
		// 64 behind a held stamp does not follow it.
		{"64 behind held", cat(seqRange(0, 100), []uint64{1100, 1036}), FlowTotals{Packets: 102, Lost: 936, Flows: 1, Untracked: 1}},
		// maxFollow after a held stamp does not follow it.
		{"maxFollow after held", cat(seqRange(0, 100), []uint64{1100, 1100 + maxFollow}), FlowTotals{Packets: 102, Flows: 1, Untracked: 2}},
		// A late packet below the first, within the window, widens the span.
		{"late below first, with a gap", []uint64{5, 6, 3}, FlowTotals{Packets: 3, Lost: 1, Reordered: 1, Flows: 1}},
		// Older than the window and below the first, but less than dupWindow below.
		{"late below first, past the window", cat(seqRange(1000, 2101), []uint64{990}), FlowTotals{Packets: 1102, Lost: 9, Reordered: 1, Flows: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Counter
			for _, s := range tc.in {
				c.Add(Stamp{Run: 1, Seq: s})
			}
			if got := c.Totals(); got != tc.want {
				t.Errorf("Totals = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCounterRunBoundaries checks runs at their edges: a replaced run's
// reordering and duplicates stay in the totals, a run one packet short of
// runQuiet is counted beside, a run sending across Ages is not taken for
// stopped, and a quiet table run gives way to a new one beside 64 busy
// runs.
func TestCounterRunBoundaries(t *testing.T) {
	// A replaced run's reordering and duplicates stay in the totals.
	var c Counter
	for _, s := range []uint64{0, 2, 1, 1} {
		c.Add(Stamp{Run: 1, Seq: s})
	}
	for i := range uint64(runQuiet + 1) {
		c.Add(Stamp{Run: 1, Flow: 1, Seq: i})
	}
	c.Add(Stamp{Run: 2, Seq: 0})
	if got := c.Totals(); got.Reordered != 1 || got.Duplicates != 1 || got.Flows != 3 || len(c.side) != 0 {
		t.Errorf("folded run: %+v, %d beside; want 1 reordered, 1 duplicate, 3 flows, none beside", got, len(c.side))
	}
	// One packet short of runQuiet: a new run is counted beside.
	var d Counter
	d.Add(Stamp{Run: 1, Seq: 0})
	for i := range uint64(runQuiet - 1) {
		d.Add(Stamp{Run: 1, Flow: 1, Seq: i})
	}
	d.Add(Stamp{Run: 2, Seq: 0})
	if len(d.side) != 1 {
		t.Errorf("run 2 after runQuiet-1 packets: %d beside, want 1", len(d.side))
	}
	// A run that keeps sending across Ages is not taken for stopped.
	var e Counter
	for i := range uint64(5) {
		e.Add(Stamp{Run: 1, Seq: i})
		e.Age()
	}
	e.Add(Stamp{Run: 2, Seq: 0})
	e.Add(Stamp{Run: 1, Seq: 5})
	if got := e.Totals(); got.Flows != 2 || got.Lost != 0 || len(e.side) != 1 {
		t.Errorf("run 1 sending across Ages, run 2 beside: %+v, %d beside; want 2 flows", got, len(e.side))
	}
	// The table's run quiet, 64 busy runs beside: a new run replaces the table's.
	var f Counter
	f.Add(Stamp{Run: 1, Seq: 0})
	for i := range uint64(runQuiet/maxSideRuns + 2) {
		for r := range uint32(maxSideRuns) {
			f.Add(Stamp{Run: 100 + r, Seq: i})
		}
	}
	f.Add(Stamp{Run: 2, Seq: 0})
	if got := f.Totals(); got.Untracked != 0 || got.Flows != maxSideRuns+2 {
		t.Errorf("new run with the table's quiet and 64 busy beside: %+v; want none untracked, %d flows", got, maxSideRuns+2)
	}
}

// TestCounterTableLimitBoundaries checks a flow numbered exactly at the
// table's limit (counted beside it, not out of range) and SetTableLimit(0),
// which means MaxFlows.
func TestCounterTableLimitBoundaries(t *testing.T) {
	var c Counter
	c.SetTableLimit(portFlows)
	c.Add(Stamp{Run: 1, Flow: portFlows, Seq: 0}) // exactly the limit
	c.Add(Stamp{Run: 1, Flow: portFlows, Seq: 2})
	if got := c.Totals(); got != (FlowTotals{Packets: 2, Lost: 1, Flows: 1}) || len(c.flows) > portFlows {
		t.Errorf("flow at the limit: %+v, table %d", got, len(c.flows))
	}
	var d Counter
	d.SetTableLimit(0) // MaxFlows again
	for f := range uint32(100) {
		d.Add(Stamp{Run: 1, Flow: f})
	}
	if got := d.Totals(); got.Flows != 100 || got.Untracked != 0 || len(d.side) != 0 {
		t.Errorf("SetTableLimit(0), 100 flows: %+v, %d beside", got, len(d.side))
	}
}

// TestCounterOneFlowBoundaries checks one flow per run at its edges: a
// tie keeps the lead, the fifth run replaces the oldest, Reset forgets
// the leads, a dropped stray's duplicates go to untracked, and a stray
// beside the table that leads again is counted where Totals sees it.
func TestCounterOneFlowBoundaries(t *testing.T) {
	// A tie keeps the lead.
	var c Counter
	c.SetOneFlowPerRun()
	for i, fl := range []uint32{3, 3, 4, 4} {
		c.Add(Stamp{Run: 1, Flow: fl, Seq: uint64(i % 2)})
	}
	if got := c.Totals(); got != (FlowTotals{Packets: 4, Flows: 1, Untracked: 2}) {
		t.Errorf("tie: %+v", got)
	}
	// The fifth run replaces the oldest.
	var d Counter
	d.SetOneFlowPerRun()
	for r := range uint32(5) {
		d.Add(Stamp{Run: 1 + r, Flow: r})
	}
	d.Add(Stamp{Run: 1, Flow: 9})
	if got := d.Totals(); got.Flows != 6 || got.Untracked != 0 {
		t.Errorf("run 1 after 4 others: %+v, want its flow 9 to lead", got)
	}
	// Reset forgets the runs' leads.
	var e Counter
	e.SetOneFlowPerRun()
	e.Add(Stamp{Run: 1, Flow: 3})
	e.Add(Stamp{Run: 1, Flow: 3, Seq: 1})
	e.Reset()
	e.Add(Stamp{Run: 1, Flow: 4})
	if got := e.Totals(); got != (FlowTotals{Packets: 1, Flows: 1}) {
		t.Errorf("after Reset: %+v", got)
	}
	// A dropped stray's duplicates move to untracked too.
	var g Counter
	g.SetOneFlowPerRun()
	g.Add(Stamp{Run: 1, Flow: 4})
	g.Add(Stamp{Run: 1, Flow: 4})
	for s := range uint64(3) {
		g.Add(Stamp{Run: 1, Flow: 3, Seq: s})
	}
	if got := g.Totals(); got != (FlowTotals{Packets: 5, Flows: 1, Untracked: 4}) {
		t.Errorf("stray with a duplicate dropped: %+v, want 4 untracked", got)
	}
	// A stray beside the table, dropped, then leading again: counted where Totals sees it.
	var h Counter
	h.SetOneFlowPerRun()
	h.SetTableLimit(portFlows)
	h.Add(Stamp{Run: 1, Flow: 150})
	h.Add(Stamp{Run: 1, Flow: 3})
	h.Add(Stamp{Run: 1, Flow: 3, Seq: 1})
	for s := range uint64(3) {
		h.Add(Stamp{Run: 1, Flow: 150, Seq: 1 + s})
	}
	if got := h.Totals(); got.Flows != 1 {
		t.Errorf("flow 150 leading again: %+v, want it counted (1 flow)", got)
	}
}

// TestPacerDueFraction checks that due counts the slot that starts before
// the deadline and ends after it: 4.5 ms left at 1 ms a packet is 5.
func TestPacerDueFraction(t *testing.T) {
	p := newPacer(1000)
	p.tat = 5500 * time.Microsecond
	if got := p.due(47, 10*time.Millisecond); got != 5 {
		t.Errorf("due with 4.5 ms left at 1 ms a packet: %d, want 5", got)
	}
}

// TestStampGolden pins the stamp's wire format, its check included: a
// generator and a sink of different versions must agree on it.
func TestStampGolden(t *testing.T) {
	b := make([]byte, StampLen)
	PutStamp(b, Stamp{Run: 0x1234, Flow: 7, Seq: 100000, Tstamp: 1_700_000_000_000_000_000})
	if got, want := hex.EncodeToString(b), goldenStamp; got != want {
		t.Errorf("stamp %s, want %s", got, want)
	}
}

// TestCounterFarBelowFirst checks a packet dupWindow below the flow's
// lowest seen: reordered, and no loss made up or made.
func TestCounterFarBelowFirst(t *testing.T) {
	var c Counter
	for s := uint64(2000); s < 3101; s++ {
		c.Add(Stamp{Run: 1, Seq: s})
	}
	c.Add(Stamp{Run: 1, Seq: 2000 - dupWindow})
	if got := c.Totals(); got != (FlowTotals{Packets: 1102, Reordered: 1, Flows: 1}) {
		t.Errorf("late by dupWindow below the first: %+v", got)
	}
}

// TestPktgenIntervalSeconds checks that each interval's Seconds is the
// time since the one before, and that the intervals' packets add up to
// the result's.
func TestPktgenIntervalSeconds(t *testing.T) {
	a, _ := pair(t, memring.Config{RingSize: 1024})
	var ivs []PktgenInterval
	r := runGen(t, a, PktgenConfig{Count: 400, Rate: 2000, Burst: 1, Interval: 40 * time.Millisecond,
		OnInterval: func(iv PktgenInterval) { ivs = append(ivs, iv) }})
	var ends []time.Duration
	var secs []float64
	var sum uint64
	for _, iv := range ivs {
		ends, secs = append(ends, iv.Elapsed), append(secs, iv.Seconds)
		sum += iv.Packets
	}
	checkSpans(t, ends, secs)
	if len(ivs) < 3 || sum != r.Packets {
		t.Errorf("%d intervals adding up to %d, result %d", len(ivs), sum, r.Packets)
	}
}

// TestEchoIntervals checks the server's intervals over a run with idle
// gaps: each Seconds the time since the one before, Echoed adding up to
// the result's, and the result's Seconds within the requests' span.
func TestEchoIntervals(t *testing.T) {
	a, b := pair(t, memring.Config{})
	var ivs []EchoInterval
	srv := make(chan EchoResult, 1)
	go func() {
		r, _ := Echo(context.Background(), b, EchoConfig{Count: 60, Idle: -1, Duration: time.Minute,
			Interval: 5 * time.Millisecond, OnInterval: func(iv EchoInterval) { ivs = append(ivs, iv) }})
		srv <- r
	}()
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	for i := range 3 {
		if i > 0 {
			time.Sleep(30 * time.Millisecond)
		}
		if _, err := PingPong(context.Background(), a, PingPongConfig{Iters: 20, Warmup: -1}); err != nil {
			t.Fatal(err)
		}
	}
	span := time.Since(t0)
	r := <-srv
	var ends []time.Duration
	var secs []float64
	var sum uint64
	for _, iv := range ivs {
		ends, secs = append(ends, iv.Elapsed), append(secs, iv.Seconds)
		sum += iv.Echoed
	}
	checkSpans(t, ends, secs)
	if r.Echoed != 60 || sum != 60 || len(ivs) < 3 {
		t.Errorf("echoed %d, %d intervals adding up to %d", r.Echoed, len(ivs), sum)
	}
	if r.Seconds <= 0 || r.Seconds > span.Seconds() {
		t.Errorf("Seconds %.3f, more than the %v from the first request to the last", r.Seconds, span)
	}
}

// TestPingPongIntervalsWarmup checks that the intervals leave the warm-up
// out and add up to the result: Iters, and UsecPerIter x Iters.
func TestPingPongIntervalsWarmup(t *testing.T) {
	a, b := pair(t, memring.Config{})
	stop := answer(b, func(n int, _ *skb.Buff) bool {
		if n <= 3 {
			time.Sleep(10 * time.Millisecond) // warm-up
		}
		if n == 8 {
			time.Sleep(100 * time.Millisecond)
		}
		return true
	})
	var ivs []PingPongInterval
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 10, Warmup: 3, Timeout: time.Second,
		Interval: 100 * time.Millisecond, OnInterval: func(iv PingPongInterval) { ivs = append(ivs, iv) }})
	stop()
	if err != nil || r.Iters != 10 {
		t.Fatalf("%+v, %v", r, err)
	}
	var iters int
	var usec float64
	for _, iv := range ivs {
		iters += iv.Iters
		usec += iv.UsecPerIter * float64(iv.Iters)
	}
	if want := r.UsecPerIter * float64(r.Iters); iters != r.Iters || math.Abs(usec-want) > 1e-3*want {
		t.Errorf("intervals %+v: %d iters, %.1f us; want %d, %.1f us", ivs, iters, usec, r.Iters, want)
	}
}

// TestPingPongResizedOwnOnly has the server send an unstamped datagram of
// another length beside each reply: stray, and not counted as resized.
func TestPingPongResizedOwnOnly(t *testing.T) {
	a, b := pair(t, memring.Config{})
	stop := answer(b, func(n int, x *skb.Buff) bool {
		if o, err := b.Cache().Alloc(300); err == nil {
			clear(o.Put(150))
			b.Xmit(o, true)
		}
		return true
	})
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 5, Warmup: -1, Timeout: time.Second})
	stop()
	if err != nil || r.Iters != 5 || r.Stray < 4 || r.Resized != 0 {
		t.Errorf("%+v, %v; want 5 round trips, foreign strays not resized", r, err)
	}
}

// TestPktgenGSORate checks that a rate-limited GSO run whose super-packets
// hold fewer datagrams than Burst keeps to its rate: the bucket is charged
// for the datagrams sent.
func TestPktgenGSORate(t *testing.T) {
	d := newSizeCounter(t, true)
	runGen(t, d, PktgenConfig{Size: 1400, Burst: 64, GSO: true, Rate: 1000, Duration: 400 * time.Millisecond})
	// Charged for a full burst per short super-packet, the run falls
	// about 28% under its rate; the low bound leaves room for a stall.
	if d.total < 320 || d.total > 401 {
		t.Errorf("%d datagrams of 1400 bytes in 400ms at 1000/s with GSO: want about 400", d.total)
	}
}

// failAllocDev is a memring device whose Allocator fails every tenth
// allocation, counting the failures.
type failAllocDev struct {
	*memring.Device
	n, fails int
}

func (d *failAllocDev) Alloc(size int) (*skb.Buff, error) {
	if d.n++; d.n%10 == 0 {
		d.fails++
		return nil, pool.ErrExhausted
	}
	return d.Cache().Alloc(size)
}

// TestPktgenAllocFailErrors checks that allocation failures count in
// Errors once: in the interval they fell in and in the run's result, not
// again in later intervals or runs.
func TestPktgenAllocFailErrors(t *testing.T) {
	a, _ := pair(t, memring.Config{RingSize: 1024})
	d := &failAllocDev{Device: a}
	var ivs []PktgenInterval
	g, err := NewPktgen(d, PktgenConfig{Rate: 4000, Duration: 50 * time.Millisecond, Burst: 1, Interval: time.Nanosecond,
		OnInterval: func(iv PktgenInterval) { ivs = append(ivs, iv) }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for run := range 2 {
		ivs, d.fails = nil, 0
		r, err := g.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for _, iv := range ivs {
			sum += iv.Errors
		}
		// One fewer when the one to fail was the warm-up's allocation
		// before the clock starts, which sends nothing (Pktgen.warm).
		if r.Errors != uint64(d.fails) && r.Errors+1 != uint64(d.fails) || sum != r.Errors || d.fails == 0 {
			t.Errorf("run %d: %d allocations failed; result's Errors %d, intervals' %d", run, d.fails, r.Errors, sum)
		}
	}
}

// TestPktgenTinyRate runs a rate so low that a packet's cost overflows
// to infinity: the one packet the bucket allows goes out.
func TestPktgenTinyRate(t *testing.T) {
	a, _ := pair(t, memring.Config{RingSize: 1024})
	if r := runGen(t, a, PktgenConfig{Rate: 1e-300, Burst: 4, Duration: 100 * time.Millisecond}); r.Packets != 1 {
		t.Errorf("rate 1e-300: %+v; want the one packet the bucket allows", r)
	}
}

// lateWaitDev is a memring device whose Wait sleeps d, whatever it was
// given: a wait that wakes late.
type lateWaitDev struct {
	*memring.Device
	d time.Duration
}

func (d *lateWaitDev) Wait(time.Duration) error {
	time.Sleep(d.d)
	return nil
}

// TestPingPongLateInAwait checks that a reply found only after the
// Timeout (by a Wait that woke late) counts as lost and late.
func TestPingPongLateInAwait(t *testing.T) {
	a, b := pair(t, memring.Config{})
	stop := answer(b, func(int, *skb.Buff) bool { return true })
	r, err := PingPong(context.Background(), &lateWaitDev{Device: a, d: 30 * time.Millisecond},
		PingPongConfig{Iters: 5, Warmup: -1, Timeout: 5 * time.Millisecond})
	stop()
	if !errors.Is(err, ErrNoReply) || r.Lost != NoReplyTries || r.Late != NoReplyTries {
		t.Errorf("%+v, %v; want ErrNoReply, %d lost and late", r, err, NoReplyTries)
	}
}
