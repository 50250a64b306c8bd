package traffic

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// fill queues n stamped packets from a into its peer's receive ring, in
// bursts of 32; the ring must have room for them.
func fill(t testing.TB, a netdev.Device, n uint64) {
	t.Helper()
	g, err := NewPktgen(a, PktgenConfig{Count: n, Burst: 32})
	if err != nil {
		t.Fatal(err)
	}
	for g.Queued() < n {
		if _, err := g.Burst(); err != nil {
			t.Fatal(err)
		}
	}
}

// drain polls d empty and returns the packets it handed over.
func drain(t testing.TB, d netdev.Device) int {
	t.Helper()
	c := d.Cache()
	total := 0
	for {
		n, err := d.Poll(64, func(b *skb.Buff) { c.Free(b) })
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// pairs returns the two sides of n memring pairs: the senders and the
// receivers.
func pairs(t testing.TB, n int, cfg memring.Config) (tx, rx []netdev.Device) {
	t.Helper()
	for range n {
		a, b := pair(t, cfg)
		tx, rx = append(tx, a), append(rx, b)
	}
	return tx, rx
}

// TestSinkCountExact has a lone sink with Count 100 and a budget of 64
// stop at exactly 100 packets of the 1000 queued, leaving the others
// queued; and a link-layer one, whose second GSO super-frame of 4
// datagrams crosses its Count of 6, count 6 datagrams and their bytes.
func TestSinkCountExact(t *testing.T) {
	a, b := pair(t, memring.Config{RingSize: 1024})
	fill(t, a, 1000)
	s, err := NewSink(b, SinkConfig{Count: 100, Budget: 64, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(context.Background())
	if err != nil || r.Packets != 100 || r.Bytes != 100*DefaultSize || r.Lost != 0 {
		t.Errorf("Run = %+v, %v; want 100 packets of %d bytes", r, err, DefaultSize)
	}
	if n, err := s.Poll(); n != 0 || err != nil {
		t.Errorf("Poll after Count = %d, %v; want 0, nil", n, err)
	}
	if n := drain(t, b); n != 900 {
		t.Errorf("%d packets left queued, want 900", n)
	}

	const seg, segs = 64, 4
	uf := labFrame("198.18.0.1", "198.18.0.2", 9000)
	hl := uf.HeaderLen()
	for i := range 2 {
		sendSuper(t, a, uf, seg, segs, 7, uint64(i*segs))
	}
	s, err = NewSink(gsoFramer{b, true, seg, segs}, SinkConfig{Link: true, Port: 9000, Count: 6, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, err = s.Run(context.Background())
	if err != nil || r.Packets != 6 || r.Bytes != 6*seg || r.FrameBytes != 2*uint64(hl+seg*segs) || r.Lost != 0 {
		t.Errorf("GSO Run = %+v, %v; want 6 datagrams of %d bytes in 2 frames", r, err, seg)
	}
}

// TestRunSinksCountExact has groups of sinks, a goroutine to each device
// (up to SoloSinks) and many devices to each goroutine, stop at exactly their
// Count: from rings filled beforehand, where the packets past it stay
// queued (but for a budget's worth a sink may have polled when another
// took the last of Count), and from generators sending as fast as they can
// all along.
func TestRunSinksCountExact(t *testing.T) {
	for _, n := range []int{2, 3, 16, SoloSinks + 3} {
		tx, rx := pairs(t, n, memring.Config{RingSize: 1024})
		for _, a := range tx {
			fill(t, a, 600)
		}
		r, err := RunSinks(context.Background(), rx, SinkConfig{Count: 1000, Budget: 64, Duration: 10 * time.Second})
		if err != nil || r.Packets != 1000 || r.Lost != 0 {
			t.Errorf("%d sinks of 600 queued packets each: %+v, %v; want 1000 packets", n, r, err)
		}
		left := 0
		for _, b := range rx {
			left += drain(t, b)
		}
		// A Poll's buffers past what another sink's packets left of
		// Count are freed uncounted: at most a budget per sink.
		if want := n*600 - 1000; left > want || left < want-64*n {
			t.Errorf("%d sinks: %d packets left queued, want %d (down to %d)", n, left, want, want-64*n)
		}
	}

	for _, n := range []int{2, 8, SoloSinks + 8} {
		tx, rx := pairs(t, n, memring.Config{RingSize: 256})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, a := range tx {
			// Until cancelled: a count the generators reach while the
			// sinks are starved of CPU would leave them short of 5000.
			g, err := NewPktgen(a, PktgenConfig{Count: 1 << 40, Burst: 16, Duration: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { g.Run(ctx) })
		}
		r, err := RunSinks(context.Background(), rx, SinkConfig{Count: 5000, Duration: 10 * time.Second, Idle: -1})
		cancel()
		wg.Wait()
		if err != nil || r.Packets != 5000 {
			t.Errorf("%d sinks with generators sending: %+v, %v; want 5000 packets", n, r, err)
		}
	}
}

// TestRunSinksFlowTable checks that a group of datagram devices counts
// one flow of a run a port (Counter.SetOneFlowPerRun; a port of a
// generator's flows sees one): 200 flows into each of two sinks, one
// packet each, count a flow a sink and leave 398 unstamped, where a table
// of MaxFlows would take them all.
func TestRunSinksFlowTable(t *testing.T) {
	tx, rx := pairs(t, 2, memring.Config{RingSize: 1024})
	for _, a := range tx {
		g, err := NewPktgen(a, PktgenConfig{Count: 200, Flows: 200, Burst: 32})
		if err != nil {
			t.Fatal(err)
		}
		for g.Queued() < 200 {
			if _, err := g.Burst(); err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := RunSinks(context.Background(), rx, SinkConfig{Count: 400, Duration: 10 * time.Second})
	want := 2
	if err != nil || r.Packets != 400 || r.Flows != want || r.Unstamped != uint64(400-want) {
		t.Errorf("two sinks of 200 flows each: %+v, %v; want %d flows, %d unstamped", r, err, want, 400-want)
	}
}

// TestRunSinksIntervals runs SoloSinks+16 sinks, polled in rounds by
// GOMAXPROCS goroutines, with a 20 ms interval while a generator feeds
// every device: the merged
// intervals come in increasing order, one per interval index, about one
// per 20 ms, adding up to the result; the group uses no more
// goroutines than GOMAXPROCS.
func TestRunSinksIntervals(t *testing.T) {
	const n, every, dur = SoloSinks + 16, 20 * time.Millisecond, 400 * time.Millisecond
	tx, rx := pairs(t, n, memring.Config{RingSize: 256})
	gens := make([]*Pktgen, n)
	for i, a := range tx {
		g, err := NewPktgen(a, PktgenConfig{Count: 1 << 20, Burst: 4})
		if err != nil {
			t.Fatal(err)
		}
		gens[i] = g
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		// One goroutine owns every sender, a burst each per millisecond.
		for ctx.Err() == nil {
			for _, g := range gens {
				g.Burst()
			}
			time.Sleep(time.Millisecond)
		}
	})
	before := runtime.NumGoroutine()
	var ivs []SinkInterval
	extra := 0
	r, err := RunSinks(context.Background(), rx, SinkConfig{Duration: dur, Interval: every, Idle: -1,
		OnInterval: func(iv SinkInterval) {
			ivs = append(ivs, iv)
			extra = max(extra, runtime.NumGoroutine()-before)
		}})
	cancel()
	wg.Wait()
	if err != nil || r.Packets == 0 {
		t.Fatalf("RunSinks = %+v, %v", r, err)
	}
	if max := int(dur/every) + 1; len(ivs) > max || len(ivs) < max/4 {
		t.Errorf("%d intervals in %v of %v each, want up to %d", len(ivs), dur, every, max)
	}
	var sum uint64
	var prev time.Duration
	for i, iv := range ivs {
		if iv.Elapsed <= prev || iv.Elapsed < every || iv.Elapsed > dur+every {
			t.Errorf("interval %d ends at %v, after %v", i, iv.Elapsed, prev)
		}
		if d := iv.Seconds - (iv.Elapsed - prev).Seconds(); d < -1e-9 || d > 1e-9 {
			t.Errorf("interval %d: %v s from %v to %v", i, iv.Seconds, prev, iv.Elapsed)
		}
		prev = iv.Elapsed
		sum += iv.Packets
	}
	if sum != r.Packets {
		t.Errorf("intervals add up to %d packets, result %d", sum, r.Packets)
	}
	if p := runtime.GOMAXPROCS(0); extra > p {
		t.Errorf("%d goroutines more during the run, want at most GOMAXPROCS %d", extra, p)
	}
}

// TestRunSinksLastIntervals ends a group of two polling goroutines a few
// ms after an Interval, by ctx and by Duration, while one device gets
// steady traffic and the other none: the idle one sleeps in its Wait
// past the Interval and ticks late, after the busy one ticked on time and
// ended with a part interval. The merged intervals still end in
// increasing order, each longer than nothing, and add up to the result.
func TestRunSinksLastIntervals(t *testing.T) {
	const every = 110 * time.Millisecond
	for _, byDuration := range []bool{false, true} {
		for try := range 3 {
			tx, rx := pairs(t, 2, memring.Config{RingSize: 4096})
			g, err := NewPktgen(tx[1], PktgenConfig{Count: 1 << 20, Burst: 4})
			if err != nil {
				t.Fatal(err)
			}
			gctx, gcancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() {
				for gctx.Err() == nil {
					g.Burst()
					time.Sleep(200 * time.Microsecond)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), every+4*time.Millisecond)
			dur := 10 * time.Second
			if byDuration {
				cancel()
				ctx, cancel = context.WithCancel(context.Background())
				dur = every + 5*time.Millisecond
			}
			var ivs []SinkInterval
			r, err := RunSinks(ctx, rx, SinkConfig{Duration: dur, Interval: every, Idle: -1,
				OnInterval: func(iv SinkInterval) { ivs = append(ivs, iv) }})
			cancel()
			gcancel()
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			var sum uint64
			var prev time.Duration
			for i, iv := range ivs {
				if iv.Elapsed <= prev || iv.Seconds <= 0 {
					t.Errorf("by duration %v, try %d: interval %d ends at %v, after %v (%v s)", byDuration, try, i, iv.Elapsed, prev, iv.Seconds)
				}
				prev = iv.Elapsed
				sum += iv.Packets
			}
			if sum != r.Packets || sum == 0 {
				t.Errorf("by duration %v, try %d: intervals add up to %d packets, result %d", byDuration, try, sum, r.Packets)
			}
		}
	}
}

// TestRunSinksEndedDevice closes a device under a running group, with two
// devices (a polling goroutine each) and with SoloSinks+2 (polled in rounds):
// its sink stops with netdev.ErrClosed, the others go on, and the merged
// intervals keep coming, so that the run, ended from OnInterval, ends long
// before its duration.
func TestRunSinksEndedDevice(t *testing.T) {
	for _, n := range []int{2, SoloSinks + 2} {
		var rx []netdev.Device
		var closed *memring.Device
		for i := range n {
			a, b, err := memring.NewPair(memring.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				// Closed by the test: a's Close reports leaks then.
				closed = b
				t.Cleanup(func() {
					if err := a.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				})
			} else {
				t.Cleanup(func() {
					a.Close()
					if err := b.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				})
			}
			rx = append(rx, b)
		}
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(50*time.Millisecond, func() { closed.Close() })
		var prev time.Duration
		ivs := 0
		t0 := time.Now()
		_, err := RunSinks(ctx, rx, SinkConfig{Duration: 10 * time.Second, Interval: 20 * time.Millisecond,
			OnInterval: func(iv SinkInterval) {
				if iv.Elapsed <= prev {
					t.Errorf("%d sinks: interval ends at %v, after %v", n, iv.Elapsed, prev)
				}
				prev = iv.Elapsed
				if ivs++; iv.Elapsed >= 200*time.Millisecond {
					cancel()
				}
			}})
		timer.Stop()
		cancel()
		if !errors.Is(err, netdev.ErrClosed) {
			t.Errorf("%d sinks: RunSinks error %v, want ErrClosed", n, err)
		}
		if el := time.Since(t0); el > 5*time.Second || ivs < 5 {
			t.Errorf("%d sinks: ran %v with %d intervals; want to end after about 10 at 200ms", n, el, ivs)
		}
	}
}

// TestRunSinksCountGSO has a group of link-layer sinks whose devices hand
// over GSO super-frames of 64 datagrams, more than a Poll's grant of the
// group's Count: it counts exactly Count datagrams, none lost (a
// super-frame past the grant takes more from the group's quota).
func TestRunSinksCountGSO(t *testing.T) {
	const seg, segs, frames = 64, 64, 20
	uf := labFrame("198.18.0.1", "198.18.0.2", 9000)
	hl := uf.HeaderLen()
	tx, rx := pairs(t, 2, memring.Config{RingSize: 64, RxBufSize: hl + seg*segs})
	devs := make([]netdev.Device, len(rx))
	for d, a := range tx {
		for i := range frames {
			sendSuper(t, a, uf, seg, segs, uint32(7+d), uint64(i*segs))
		}
		devs[d] = gsoFramer{rx[d].(*memring.Device), true, seg, segs}
	}
	const count = 2000 // of 2*20*64 = 2560
	r, err := RunSinks(context.Background(), devs, SinkConfig{Link: true, Port: 9000, Count: count, Budget: 8, Duration: 5 * time.Second})
	if err != nil || r.Packets != count || r.Lost != 0 {
		t.Errorf("RunSinks = %+v, %v; want %d datagrams, none lost", r, err, count)
	}
}

// firstGSO is a memring device whose first buffer handed over is a GSO
// super-packet of 4 64-byte datagrams; the others are plain.
type firstGSO struct {
	*memring.Device
	n *int
}

func (g firstGSO) Poll(budget int, h netdev.Handler) (int, error) {
	return g.Device.Poll(budget, func(b *skb.Buff) {
		if *g.n == 0 {
			b.SetGSO(64, 4, skb.GSOUDPL4)
		}
		*g.n++
		h(b)
	})
}

// TestCountGSOThenPlain has a GSO buffer of 4 datagrams come first in a
// Poll, plain datagrams after it: a lone sink with Count 5 and a group
// with Count 10 count exactly that many, and the lone sink's next Poll
// hands over nothing.
func TestCountGSOThenPlain(t *testing.T) {
	queue := func(a *memring.Device, plain int) {
		sts := make([]Stamp, 4+plain)
		for i := range sts {
			sts[i] = Stamp{Run: 3, Seq: uint64(i), Tstamp: 1}
		}
		p, err := a.Cache().Alloc(256)
		if err != nil {
			t.Fatal(err)
		}
		d := p.Put(256)
		for k := range 4 {
			PutStamp(d[64*k:], sts[k])
		}
		if err := a.Xmit(p, true); err != nil {
			t.Fatal(err)
		}
		sendStamps(t, a, sts[4:])
	}
	a, b := pair(t, memring.Config{RingSize: 64})
	queue(a, 9)
	n := 0
	s, err := NewSink(firstGSO{b, &n}, SinkConfig{Count: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Poll(); err != nil {
		t.Fatal(err)
	}
	if r := s.Result(); r.Packets != 5 {
		t.Errorf("lone sink, Count 5: counted %d", r.Packets)
	}
	if m, err := s.Poll(); m != 0 || err != nil {
		t.Errorf("Poll after Count = %d, %v; want 0, nil", m, err)
	}

	a, b = pair(t, memring.Config{RingSize: 64})
	queue(a, 20)
	_, b2 := pair(t, memring.Config{RingSize: 64})
	n = 0
	r, err := RunSinks(context.Background(), []netdev.Device{firstGSO{b, &n}, b2}, SinkConfig{Count: 10, Budget: 10, Duration: 5 * time.Second})
	if err != nil || r.Packets != 10 || r.Lost != 0 {
		t.Errorf("group, Count 10: %+v, %v; want 10 packets, none lost", r, err)
	}
}

// TestRunSinksManyProcs runs a group of SoloSinks+1 devices with GOMAXPROCS
// above that: no more polling goroutines than devices.
func TestRunSinksManyProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(SoloSinks + 10))
	_, rx := pairs(t, SoloSinks+1, memring.Config{RingSize: 64})
	if _, err := RunSinks(context.Background(), rx, SinkConfig{Duration: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}

// TestSinkThreads checks how many goroutines RunSinks polls with: one per
// device up to the Ps, and past them only for sinks that wait in their
// devices' Wait (up to SoloSinks); sinks that spin or nap hold their Ps and
// are polled in rounds by one goroutine per P.
func TestSinkThreads(t *testing.T) {
	const procs = 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	wait, nap, spin := SinkConfig{}, SinkConfig{Sleep: DefaultSinkSleep}, SinkConfig{Spin: true}
	for _, tc := range []struct {
		n    int
		cfg  SinkConfig
		want int
	}{
		{1, nap, 1},
		{procs, nap, procs},
		{procs, spin, procs},
		{procs + 1, wait, procs + 1},
		{procs + 1, nap, procs},
		{procs + 1, spin, procs},
		{16, nap, procs},
		{SoloSinks, wait, SoloSinks},
		{SoloSinks + 1, wait, procs},
		{1024, nap, procs},
	} {
		if got := SinkThreads(tc.n, tc.cfg); got != tc.want {
			t.Errorf("SinkThreads(%d, Sleep %v Spin %v) = %d, want %d (GOMAXPROCS %d)", tc.n, tc.cfg.Sleep, tc.cfg.Spin, got, tc.want, procs)
		}
	}
}

// TestMergerPartOrder has a runner file its part last interval after take
// returned its index and after another runner reported two later ones: the
// part goes to the next index, with an Elapsed inside that index's time,
// so the intervals handed over still end in increasing order.
func TestMergerPartOrder(t *testing.T) {
	const e = 10 * time.Millisecond
	m := newMerger(2, e)
	m.add(0, 1, SinkInterval{Elapsed: e + e/2, Packets: 1})
	m.add(1, 1, SinkInterval{Elapsed: e + e/5, Packets: 1})
	got := m.take() // index 1
	m.add(1, 2, SinkInterval{Elapsed: 2*e + e/10, Packets: 1})
	m.add(1, 3, SinkInterval{Elapsed: 3*e + e/10, Packets: 1})
	// Runner 0 ended at 1.9e and files its part late, at 3.5e.
	m.addPart(0, 1, SinkInterval{Elapsed: e + 9*e/10, Packets: 1}, func() time.Duration { return 3*e + e/2 })
	m.end(0)
	m.end(1)
	got = append(got, m.take()...)
	var prev time.Duration
	var sum uint64
	for _, iv := range got {
		if iv.Elapsed <= prev {
			t.Errorf("interval ends at %v, after %v: %+v", iv.Elapsed, prev, got)
		}
		prev = iv.Elapsed
		sum += iv.Packets
	}
	if len(got) != 3 || sum != 5 {
		t.Errorf("%d intervals of %d packets, want 3 of 5: %+v", len(got), sum, got)
	}
}
