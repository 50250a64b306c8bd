package traffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skbdev/skb/netdev"
)

// SoloSinks is the most devices RunSinks gives a goroutine (and, with
// Thread, an OS thread) each. Past it, a thread per device costs more
// than it gives: with 1024 ports and a generator spreading its datagrams
// over them, each datagram woke a thread of its own, and the sink took in
// 60-84 thousand a second against 270 thousand polled in rounds.
const SoloSinks = 64

// SinkThreads returns how many goroutines RunSinks polls n devices with
// under cfg: n, one each, when n is at most GOMAXPROCS, or when n is at
// most SoloSinks and the sinks wait in their devices' Wait when drained
// (cfg.Sleep 0, no cfg.Spin); otherwise GOMAXPROCS, each polling its share
// in rounds. A sink that spins or naps holds its P (see package nap), and
// more such goroutines than Ps take turns a preemption slice (10 ms) at a
// time: a packet then waits for its sink's turn, tens of milliseconds at 16
// ports. For the same reason a device that keeps its P while it waits
// (udp.Config.KeepP) suits a group only when SinkThreads is at most
// GOMAXPROCS.
func SinkThreads(n int, cfg SinkConfig) int {
	procs := runtime.GOMAXPROCS(0)
	switch {
	case n <= procs:
		return n
	case n <= SoloSinks && !cfg.Spin && cfg.Sleep == 0:
		return n
	}
	return procs
}

// portFlows bounds each flow table of a group of sinks: see RunSinks.
const portFlows = 64

// RunSinks runs one Sink per device with the same config and merges their
// results: a sink for a range of UDP ports, one socket per port, as a
// generator's flows need on a datagram device.
//
// SinkThreads says how many goroutines poll the devices. With one per
// device (with cfg.Thread, on an OS thread of its own), each is polled as
// Sink.Run does, under the group's bounds: it waits in its device's Wait,
// so a packet is seen as soon as the kernel wakes it. With fewer,
// GOMAXPROCS goroutines poll them, device i by goroutine i modulo their
// number, which keeps it for the whole run (a device belongs to one
// goroutine); each loops over its
// devices in rounds: in a round it calls each
// Sink's Poll, again while it hands over its whole budget, up to
// 8 times, and it starts the next round at once while any
// device was not drained, or with cfg.Spin. After a round that drained
// them all it sleeps cfg.Sleep while traffic flows (a packet came to one
// of its devices in the last max(SleepSpan, Sleep)); otherwise it waits
// in its first device's Wait, for 1 ms after a round with packets and
// twice as long as the time before after each round without, up to 20
// ms. So a packet to a device other than the first waits for up to 20 ms
// and a round before it is seen, and an idle group costs one Poll per
// device every 20 ms.
//
// The bounds apply to the group, all of whose sinks start together:
// Duration to the run, Idle to the time since the last packet of any,
// ctx to all. Count is exact for the group as for one sink: each packet
// a sink counts takes one from what Count still allows all the sinks (one
// atomic counter), and each Poll's budget is cut to what is left, so they
// count exactly Count packets between them when that many come, with no
// gap in a flow; the rest stay queued in their devices, but for the
// buffers of a Poll that another sink's packets left without their share,
// and the datagrams of a GSO buffer past Count, which are freed uncounted.
//
// With more than one datagram device (a socket per port) each sink counts
// its flows in a table of 64 flows; stamps of flow numbers 64 or more are
// counted beside it, 64 (run, flow) pairs at most (Counter.SetTableLimit):
// a port of a generator's flows sees one flow each, and forged stamps
// cannot make every port's table MaxFlows long. Each counts one flow of a
// run, the one that sent the most there (Counter.SetOneFlowPerRun): a
// datagram of another flow, sent there by a corrupt destination port no
// checksum caught, is unstamped. A single device, and
// link-layer sinks (fanout members, each seeing any of the flows), keep
// MaxFlows.
//
// OnInterval, when set, is called on the calling goroutine once for each
// interval index k >= 1 that a polling goroutine reported, in increasing
// order of k, with what all the sinks received in interval k added up.
// Interval k ends k×Interval after the start: each polling goroutine ends
// it, for all its sinks, at its first check of the clock at or after that
// time (it checks after every round and at least every 20 ms while
// waiting) and reports it under the index of the time it ends it, so a
// goroutine late by more than an Interval reports its packets since its
// previous report in the later interval, and an index none reported is
// skipped. Interval k is handed over as soon as every polling goroutine
// still running has reported k or a later one (one that has ended
// reports no more), and never again. Its Elapsed is the latest end any
// goroutine reported for it, from the start of the run, so Elapsed
// strictly increases from call to call; Seconds is the time since the
// previous call's Elapsed (since the start for the first), and PPS and
// the Mbit/s figures are over it. A polling goroutine that ends reports
// its last interval, up to its end, as Sink.Run does (see
// SinkConfig.OnInterval), so that the intervals add up to the result: a
// part one under the index of the time it ends, as a tick, joining its
// last tick's counts there while that index is not handed over yet, and
// under the next index otherwise.
//
// The error is the sinks' errors joined (a sink that fails stops alone;
// the others go on), with the merged result of all.
func RunSinks(ctx context.Context, devs []netdev.Device, cfg SinkConfig) (SinkResult, error) {
	if len(devs) == 0 {
		return SinkResult{}, fmt.Errorf("traffic: sink: %w: no device", ErrConfig)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c := cfg
	c.Count, c.OnInterval = 0, nil // the group's, applied by its runners
	sinks := make([]*Sink, len(devs))
	for i, d := range devs {
		s, err := NewSink(d, c)
		if err != nil {
			return SinkResult{}, err
		}
		if len(devs) > 1 && !cfg.Link {
			s.cnt.SetTableLimit(portFlows)
			s.cnt.SetOneFlowPerRun()
		}
		sinks[i] = s
	}
	g := &group{}
	if cfg.Count > 0 {
		g.quota = &quota{}
		g.quota.left.Store(cfg.Count)
	}
	nr := SinkThreads(len(devs), cfg)
	if cfg.OnInterval != nil {
		g.merge = newMerger(nr, cmp0(cfg.Interval, DefaultInterval))
	}
	runners := make([]runner, nr)
	clk := sinks[0].clk // one clock, so that the sinks' times compare
	for i, s := range sinks {
		s.clk, s.quota = clk, g.quota
		r := &runners[i%nr]
		r.sinks = append(r.sinks, s)
	}
	start := clk.now()
	finished := make(chan struct{}, nr)
	for i := range runners {
		r := &runners[i]
		r.cfg, r.grp, r.id = cfg, g, i
		r.idle = cmp0(cfg.Idle, DefaultIdle)
		r.every = cmp0(cfg.Interval, DefaultInterval)
		r.init(start, start+sinks[0].dur)
		go func() {
			run := func() { r.run(ctx.Done()) }
			if !cfg.Thread {
				run()
			} else if _, err := netdev.RunOnThread(-1, run); err != nil {
				run() // only pinning fails, and no CPU is asked for
			}
			if g.merge != nil {
				g.merge.end(i)
			}
			finished <- struct{}{}
		}()
	}
	var ready <-chan struct{}
	if g.merge != nil {
		ready = g.merge.ready
	}
	var prev time.Duration // Elapsed of the last interval handed to OnInterval
	emit := func() {
		for _, iv := range g.merge.take() {
			iv.Seconds = (iv.Elapsed - prev).Seconds()
			prev = iv.Elapsed
			iv.PPS, iv.Mbps = rates(iv.Packets, iv.Bytes, iv.Seconds)
			_, iv.FrameMbps = rates(iv.Packets, iv.FrameBytes, iv.Seconds)
			cfg.OnInterval(iv)
		}
	}
	for running := nr; running > 0; {
		select {
		case <-finished:
			running--
		case <-ready:
		}
		if g.merge != nil {
			emit()
		}
	}
	var errs []error
	for i := range runners {
		errs = append(errs, runners[i].errs...)
	}
	return mergeSinks(sinks), errors.Join(errs...)
}

// roundPolls is the most Polls of one device in a round of a runner of
// several sinks, while each hands over its whole budget: a device that
// gets most of the traffic is drained before the round goes on to the
// others. With one flow of 400000 datagrams from skb pktgen into a sink of
// 1024 ports on loopback (its sockets sharing one pool), the kernel
// dropped 14-30% of them with one Poll a round and 0-11% with up to 8 (3
// runs each, on 2 shared vCPUs).
const roundPolls = 8

// runner polls a set of sinks on one goroutine, the one their devices
// belong to, until the bounds of their run end it: Sink.Run's lone sink,
// or a share of RunSinks' group.
type runner struct {
	sinks []*Sink
	cfg   SinkConfig    // Spin and Sleep; a lone sink's Count and OnInterval
	idle  time.Duration // 0 or less: never idle
	every time.Duration // of the intervals
	grp   *group        // RunSinks' shared state; nil for a lone sink
	id    int           // the runner's index in grp

	errs            []error // of each sink, the error that ended its polling
	active          []int   // the sinks still polled, in order
	clk             *clock  // the sinks' clock
	start, deadline time.Duration
	nextTick        time.Duration     // the end of the interval being counted
	last            time.Duration     // the end of the last Poll that counted packets; 0 before one
	wait            time.Duration     // a runner of several sinks: the last timeout of Wait
	yield           bool              // spinning on the process's one P (soleP): yield it now and then (yieldEvery)
	bp              netdev.BusyPoller // Spin with one sink, on a device that busy-polls itself: the sink's device
	idleRounds      int               // rounds of empty Polls, for yield
}

// init prepares the run from start to deadline, on the sinks' clock.
func (r *runner) init(start, deadline time.Duration) {
	r.yield = r.cfg.Spin && soleP()
	if len(r.sinks) == 1 {
		// A sink alone spins in its device's BusyPoll, when it has one;
		// several are polled in turn, each Poll looking once.
		r.bp = busyPoller(r.sinks[0].dev, r.cfg.Spin)
	}
	r.errs = make([]error, len(r.sinks))
	r.active = make([]int, len(r.sinks))
	for i, s := range r.sinks {
		r.active[i] = i
		s.start, s.lastTick = start, start
	}
	r.clk = &r.sinks[0].clk
	r.start, r.deadline = start, deadline
	r.nextTick = start + r.every
}

// run polls until the bounds, done, or every sink's device failed, and
// then reports the run's last interval (see final).
func (r *runner) run(done <-chan struct{}) {
	ticks := r.grp == nil && r.cfg.OnInterval != nil || r.grp != nil && r.grp.merge != nil
	end := r.poll(done, ticks)
	if ticks {
		r.final(end)
	}
}

// poll is run's loop; it returns when the run ended, on the sinks' clock.
func (r *runner) poll(done <-chan struct{}, ticks bool) time.Duration {
	spins := 0
	for {
		got, drained, fresh := false, true, false
		kept := r.active[:0]
		for _, i := range r.active {
			s := r.sinks[i]
			n, err := s.poll(r.bp, spinSlice(r.yield))
			// A Poll that handed over less than its budget drained the
			// queue: polling again at once would find it empty. In a
			// round of several, one that did not is polled again, up to
			// roundPolls times, before the round goes on.
			for k := 1; err == nil && n == s.budget && len(r.active) > 1 && k < roundPolls; k++ {
				got = true
				if s.counted {
					r.last = s.last
				}
				n, err = s.Poll()
			}
			if err != nil {
				r.errs[i] = err
				fresh = false
				continue
			}
			kept = append(kept, i)
			drained = drained && n < s.budget
			got = got || n > 0
			if fresh = n > 0 && s.counted; fresh {
				r.last = s.last
			}
		}
		r.active = kept
		if len(r.active) == 0 {
			return r.clk.now()
		}
		if !got && r.cfg.Spin {
			if r.idleRounds++; r.yield && (r.bp != nil || r.idleRounds%yieldEvery == 0) {
				runtime.Gosched()
			}
			// Spinning on empty queues: look at the clock (and the
			// bounds, the interval and done) after every 64th Poll
			// only, as the echo server does; after every BusyPoll,
			// which spun its slice.
			if spins += len(r.active); spins < 64 && r.bp == nil {
				continue
			}
			spins = 0
		}
		// The end of the round's last Poll, when it counted packets,
		// saves a read of the clock.
		now := r.last
		if !fresh {
			now = r.clk.now()
		}
		last := r.lastPacket(got)
		if r.full() || now >= r.deadline || last != 0 && r.idle > 0 && now-last >= r.idle {
			return now
		}
		if ticks && now >= r.nextTick {
			r.tick(now)
		}
		if done != nil {
			select {
			case <-done:
				return now
			default:
			}
		}
		if got {
			r.wait = 0
		}
		if !drained || r.cfg.Spin {
			continue
		}
		if r.cfg.Sleep > 0 && r.last != 0 && now-r.last < max(SleepSpan, r.cfg.Sleep) {
			sleep(r.cfg.Sleep)
			continue
		}
		wait := waitSlice
		if len(r.active) > 1 {
			// The other devices are not watched while waiting: back
			// off from SleepSpan to waitSlice.
			r.wait = min(waitSlice, max(SleepSpan, 2*r.wait))
			wait = r.wait
		}
		i := r.active[0]
		if err := r.sinks[i].dev.Wait(min(wait, r.deadline-now)); err != nil && !errors.Is(err, netdev.ErrTimeout) {
			r.errs[i] = err
			r.active = r.active[1:]
			if len(r.active) == 0 {
				return r.clk.now()
			}
		}
	}
}

// lastPacket returns the end of the last Poll that counted packets, of
// the whole group in RunSinks, or 0 before one did; got says whether this
// runner's last round had any, to publish.
func (r *runner) lastPacket(got bool) time.Duration {
	if r.grp == nil {
		return r.last
	}
	if got {
		r.grp.saw(r.last)
	}
	return time.Duration(r.grp.last.Load())
}

// full reports whether the run counted its Count.
func (r *runner) full() bool {
	if r.grp != nil {
		return r.grp.quota != nil && r.grp.quota.full()
	}
	return r.cfg.Count > 0 && r.sinks[0].packets >= r.cfg.Count
}

// tick ends the current interval at now: a lone sink's goes to its
// OnInterval, a group runner's sinks' added up to the group's merger.
func (r *runner) tick(now time.Duration) {
	k := int64((now - r.start) / r.every)
	r.nextTick = r.start + time.Duration(k+1)*r.every
	if r.grp == nil {
		r.cfg.OnInterval(r.sinks[0].interval(now))
		return
	}
	var sum SinkInterval
	for _, s := range r.sinks {
		sum.add(s.interval(now))
	}
	r.grp.merge.add(r.id, k, sum)
}

// final reports the run's last interval, which ends at end, the end of
// the run, so that the intervals add up to the result: a whole one as
// tick does (the loop checks the bounds before the interval, so a run of
// a whole number of Intervals ends before ticking for its last), and a
// part one when it counted anything (an idle run's quiet tail says
// nothing). A group runner files its part interval as tick would, under
// the index of the time it ends, which its last tick may have used
// already (see merger.addPart).
func (r *runner) final(end time.Duration) {
	if end >= r.nextTick {
		r.tick(end)
		return
	}
	if r.grp == nil {
		if iv := r.sinks[0].interval(end); !iv.quiet() {
			r.cfg.OnInterval(iv)
		}
		return
	}
	var sum SinkInterval
	for _, s := range r.sinks {
		sum.add(s.interval(end))
	}
	if sum.quiet() {
		return
	}
	r.grp.merge.addPart(r.id, int64((end-r.start)/r.every), sum, func() time.Duration { return r.clk.now() - r.start })
}

// quiet reports whether iv counted nothing: no packet, loss, reordering
// or kernel drop.
func (iv *SinkInterval) quiet() bool {
	return iv.Packets == 0 && iv.Lost == 0 && iv.Reordered == 0 && iv.KernelDrops == 0
}

// add adds the counts of o to iv and keeps the later Elapsed; the rates
// are left for the caller.
func (iv *SinkInterval) add(o SinkInterval) {
	iv.Elapsed = max(iv.Elapsed, o.Elapsed)
	iv.Seconds = max(iv.Seconds, o.Seconds)
	iv.Packets += o.Packets
	iv.Bytes += o.Bytes
	iv.FrameBytes += o.FrameBytes
	iv.Lost += o.Lost
	iv.Reordered += o.Reordered
	iv.KernelDrops += o.KernelDrops
}

// group is what the runners of RunSinks share.
type group struct {
	quota *quota       // nil without a Count
	merge *merger      // nil without OnInterval
	last  atomic.Int64 // the latest end of a Poll that counted packets, on the sinks' clock; 0 before one
}

// saw publishes t, the end of a Poll that counted packets.
func (g *group) saw(t time.Duration) {
	for {
		l := g.last.Load()
		if int64(t) <= l || g.last.CompareAndSwap(l, int64(t)) {
			return
		}
	}
}

// quota is the packets a group's Count allows its sinks: each packet a
// sink counts takes one (a GSO buffer, one per datagram) at the moment it
// is counted, so that once none is left none comes back, and the sinks
// count exactly Count between them with no gap in a flow.
type quota struct {
	left atomic.Uint64 // not yet counted
}

// take takes up to want packets and returns how many it took.
func (q *quota) take(want uint64) uint64 {
	for {
		l := q.left.Load()
		g := min(l, want)
		if g == 0 || q.left.CompareAndSwap(l, l-g) {
			return g
		}
	}
}

// full reports whether the sinks counted the whole quota.
func (q *quota) full() bool { return q.left.Load() == 0 }

// merger adds up the intervals RunSinks' runners report and hands them to
// the calling goroutine in order.
type merger struct {
	mu      sync.Mutex
	pending map[int64]*SinkInterval // by interval index
	marks   []int64                 // of each runner: the last index it reported; MaxInt64 once it ended
	taken   int64                   // the highest index take has returned; -1 before any
	every   time.Duration           // the Interval
	ready   chan struct{}           // signalled, without blocking, after each change
}

func newMerger(runners int, every time.Duration) *merger {
	m := &merger{pending: map[int64]*SinkInterval{}, marks: make([]int64, runners), taken: -1, every: every, ready: make(chan struct{}, 1)}
	for i := range m.marks {
		m.marks[i] = -1
	}
	return m
}

// add adds runner w's interval k; a runner reports increasing indexes
// (its part interval, through addPart, may repeat its last).
func (m *merger) add(w int, k int64, iv SinkInterval) {
	m.mu.Lock()
	m.addLocked(w, k, iv)
	m.mu.Unlock()
	m.signal()
}

func (m *merger) addLocked(w int, k int64, iv SinkInterval) {
	acc := m.pending[k]
	if acc == nil {
		acc = &SinkInterval{}
		m.pending[k] = acc
	}
	acc.add(iv)
	m.marks[w] = k
}

// addPart adds runner w's last interval, a part one that ends in the time
// of interval k, which w's last tick may have reported already. Its counts
// join interval k while take has not returned k, so that a part interval
// never ends a later index earlier than a tick that comes late for an
// earlier one; otherwise the next index, with its Elapsed read again
// (elapsed, under the lock), later than that of every interval taken, and
// held inside that index's time, earlier than any report of a later index
// (a runner that stalled past it).
func (m *merger) addPart(w int, k int64, iv SinkInterval, elapsed func() time.Duration) {
	m.mu.Lock()
	if k <= m.taken {
		k = m.taken + 1
		iv.Elapsed = min(elapsed(), time.Duration(k+1)*m.every-1)
	}
	m.addLocked(w, k, iv)
	m.mu.Unlock()
	m.signal()
}

// end marks runner w as ended: it reports no more.
func (m *merger) end(w int) {
	m.mu.Lock()
	m.marks[w] = math.MaxInt64
	m.mu.Unlock()
	m.signal()
}

func (m *merger) signal() {
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

// take removes and returns, in increasing order of index, the intervals
// no running runner can add to any more: those up to the lowest index
// each has reported.
func (m *merger) take() []SinkInterval {
	m.mu.Lock()
	defer m.mu.Unlock()
	lo := slices.Min(m.marks)
	var ks []int64
	for k := range m.pending {
		if k <= lo {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	out := make([]SinkInterval, len(ks))
	for i, k := range ks {
		out[i] = *m.pending[k]
		delete(m.pending, k)
	}
	if len(ks) > 0 {
		m.taken = ks[len(ks)-1]
	}
	return out
}

// mergeSinks adds up the results of sinks that have all returned.
func mergeSinks(sinks []*Sink) SinkResult {
	var r SinkResult
	var lat Histogram
	var first, last time.Time
	for _, s := range sinks {
		x := s.Result()
		r.Packets += x.Packets
		r.Bytes += x.Bytes
		r.FrameBytes += x.FrameBytes
		r.Lost += x.Lost
		r.Reordered += x.Reordered
		r.Duplicates += x.Duplicates
		r.Unstamped += x.Unstamped
		r.Flows += x.Flows
		r.Other += x.Other
		r.KernelDrops += x.KernelDrops
		r.Dropped += x.Dropped
		r.Copybreak += x.Copybreak
		lat.merge(&s.lat)
		if s.seen {
			f, l := s.clk.start.Add(s.first), s.clk.start.Add(s.last)
			if first.IsZero() || f.Before(first) {
				first = f
			}
			if l.After(last) {
				last = l
			}
		}
	}
	if !first.IsZero() && r.Packets > 1 {
		// As Sink.Result: one packet has no span, and no rate.
		r.Seconds = last.Sub(first).Seconds()
	}
	r.PPS, r.Mbps = rates(r.Packets, r.Bytes, r.Seconds)
	_, r.FrameMbps = rates(r.Packets, r.FrameBytes, r.Seconds)
	r.Latency = lat.Summary()
	return r
}
