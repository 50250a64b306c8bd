package traffic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Defaults of PingPong and Echo.
const (
	// DefaultIters is the number of measured round trips when the config
	// gives none.
	DefaultIters = 10000
	// MaxIters bounds Iters: PingPong keeps every round trip time (8 bytes
	// each) to report exact percentiles.
	MaxIters = 10_000_000
	// DefaultReplyTimeout is how long PingPong waits for each reply.
	DefaultReplyTimeout = time.Second
	// DefaultEchoIdle is how long Echo waits, once a request came, for the
	// next before it stops: the C reference server's three seconds.
	DefaultEchoIdle = 3 * time.Second
)

// PingPongConfig configures a round-trip test: one request in flight,
// answered by Echo (or any UDP echo server) at the other end.
type PingPongConfig struct {
	// Dst, Frame: where requests go, as in PktgenConfig. With Dst the
	// device must be an AddrXmitter; with neither, requests go with Xmit to
	// the device's own destination. With Frame, a reply is a UDP frame to
	// Frame.SourcePort.
	Dst   netip.AddrPort
	Frame *header.UDPFrame

	// Size is the UDP payload of each request in bytes, at least
	// StampLen and, without Frame, at most MaxDatagram to an IPv4 Dst or
	// MaxDatagram6 otherwise; 0 means DefaultSize.
	Size int

	// Iters is the number of measured round trips (0 means DefaultIters,
	// at most MaxIters); Warmup is the number of round trips before them
	// that are not measured (0 means Iters/10, at most 1000, as the C
	// reference does; negative means none). Duration bounds the whole run
	// (0 means DefaultDuration), also while a reply is awaited: a run cut
	// short reports the round trips it made, and the request the end
	// cut off counts neither as answered nor as lost.
	Iters    int
	Warmup   int
	Duration time.Duration

	// Timeout is how long to wait for each reply (0 means
	// DefaultReplyTimeout), from its request's send to its hand-over by
	// Poll: the client waits no longer than that, and a reply that comes
	// later (found by the Poll after the wait that timed out) is no round
	// trip. A request without a reply in time counts in Lost; when
	// the first NoReplyTries requests get none (each within Timeout, or
	// before Duration ends the run), or all of a shorter run's, PingPong
	// returns ErrNoReply.
	Timeout time.Duration

	// BusyPoll spins on the device's Poll while waiting for a reply
	// instead of sleeping in its Wait: no wake-up on the reply's path, one
	// core busy. A device that busy-polls itself (netdev.BusyPoller: the
	// UDP driver) spins in its BusyPoll instead, which makes one probe of
	// the socket after another with nothing between them (measured on
	// loopback, 64 B, skb pingpong processes: p50 0.975x the loop of
	// Polls, median of six alternating rounds; see mmsg.RecvfromSpin).
	BusyPoll bool

	// Budget is the most packets one Poll hands over; 0 means 1: with
	// one request in flight a reply is one packet, and the UDP driver then
	// asks the kernel for one datagram rather than a batch (measured with
	// busy polling on loopback, about 1 µs less per round trip than 64).
	Budget int

	// OnInterval, when set, is called on the client's goroutine at the
	// first reply Interval (0 means DefaultInterval) or more after the
	// last call's, and once more at the end of the run for the round
	// trips since, so that the intervals' Iters add up to the result's.
	OnInterval func(PingPongInterval)
	Interval   time.Duration
}

// PingPongInterval is what one interval of a ping-pong run measured.
type PingPongInterval struct {
	Elapsed time.Duration // from the start of the run to the interval's last reply
	Iters   int           // round trips measured in the interval
	// UsecPerIter is the interval's time over Iters, in microseconds, as
	// the result's: from the end of the interval before (its Elapsed), or
	// from the first measured request's Xmit when that came later (the
	// warm-up's intervals have no Iters), to this one's last reply, so
	// that the intervals' UsecPerIter×Iters add up to the result's
	// Seconds.
	// With one request in flight it is the mean round trip plus the
	// client's time between a reply and the next request.
	UsecPerIter float64
	P50         time.Duration // of the interval's round trips
}

// PingPongResult is what a ping-pong run measured, in the terms of
// ibv_rc_pingpong: Bytes is Size*Iters*2 (each round trip moves the
// payload both ways), Seconds the time of the measured round trips from
// the first request's Xmit (where its round trip's clock starts) to the
// last reply, Mbps = Bytes*8/Seconds/10^6 and
// UsecPerIter = Seconds/Iters in microseconds. The percentiles are of the
// round trip times, each from the request's Xmit to the reply's hand-over
// by Poll, taken as the C reference takes them (sorted, element n*q).
type PingPongResult struct {
	Iters       int
	Size        int
	Bytes       uint64
	Seconds     float64
	Mbps        float64
	UsecPerIter float64

	Min, Mean, P50, P90, P99, P999, Max time.Duration

	// Lost counts measured requests (not the Warmup's) that got no reply
	// within Timeout, so that Iters + Lost is the requests measured; Late
	// counts those of them whose reply came later: found
	// by the Poll after the wait that timed out, or while a later request
	// was awaited (then also counted in Stray), each once however many
	// copies of it come, so Late <= Lost; Stray counts packets
	// received that were not the awaited reply (replies to earlier
	// requests, a reply of another length than its request, other
	// traffic).
	Lost int
	Late int
	// WarmupLost and WarmupLate are Lost and Late for the Warmup's
	// requests, counted apart: no reply in time during the warm-up
	// usually says why a run measured nothing (a timeout too short, the
	// run's Duration spent waiting).
	WarmupLost, WarmupLate int
	Stray                  uint64
	// Resized counts the packets of Stray that carry a stamp of this
	// run but not Size bytes of payload: requests of the run that came
	// back cut short or grown on the way.
	Resized uint64
}

type pinger struct {
	dev      netdev.Device
	bp       netdev.BusyPoller // dev, when BusyPoll is set and dev busy-polls itself
	yield    bool              // busy-polling on the process's one P (soleP): yield it now and then (yieldEvery)
	cache    *pool.Cache
	devAlloc Allocator
	ax       AddrXmitter
	cfg      PingPongConfig
	size     int
	link     bool
	tmpl     frameTemplate
	run      uint32
	want     uint64
	got      bool
	t0, t1   time.Duration // the measured request's Xmit and its reply's hand-over
	stray    uint64
	resized  uint64 // of stray: this run's stamp, another length
	// late counts the replies that came after their request's Timeout:
	// [0] the warm-up's, [1] the measured requests' (see countLate).
	late [2]int
	// lostSeqs holds the requests counted lost whose reply has not come:
	// one that comes later counts in late once, and leaves; a copy of a
	// reply (a server or path that duplicates) is stray alone. Made at
	// the first loss.
	lostSeqs map[uint64]struct{}
	scratch  [StampLen]byte
	frame    header.Frame // the reply being examined, parsed in place
	handler  netdev.Handler
	clk      clock
}

// PingPong measures round trips over dev: it sends a request stamped with
// its sequence number, waits for the reply carrying that stamp, and
// repeats, Warmup+Iters times or until Duration or ctx ends the run. It
// belongs to dev's goroutine while it runs. It returns an error wrapping
// ErrConfig for an invalid config, ErrNoReply when the first NoReplyTries
// requests (all of a shorter run's) got no reply, or the device's error
// (such as ECONNREFUSED from a connected UDP socket whose peer has no
// server), with the result so far. A run ctx ends returns nil, replies or
// not: the result says what was measured.
func PingPong(ctx context.Context, dev netdev.Device, cfg PingPongConfig) (PingPongResult, error) {
	p := &pinger{dev: dev, bp: busyPoller(dev, cfg.BusyPoll), cache: dev.Cache(), cfg: cfg, yield: soleP()}
	res := PingPongResult{}
	if err := p.setup(); err != nil {
		return res, fmt.Errorf("traffic: pingpong: %w", err)
	}
	res.Size = p.size
	if err := dev.Flush(); errors.Is(err, netdev.ErrClosed) {
		// Closed before the run: its Cache may not be used any more.
		return res, fmt.Errorf("traffic: pingpong: %w", err)
	}
	r, err := p.loop(ctx, &res)
	if err != nil {
		return r, fmt.Errorf("traffic: pingpong: %w", err)
	}
	return r, nil
}

func (p *pinger) setup() error {
	cfg := &p.cfg
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	p.size = cmp0(cfg.Size, DefaultSize)
	cfg.Iters = cmp0(cfg.Iters, DefaultIters)
	if cfg.Warmup == 0 {
		cfg.Warmup = min(cfg.Iters/10, 1000)
	}
	cfg.Warmup = max(cfg.Warmup, 0)
	cfg.Duration = cmp0(cfg.Duration, DefaultDuration)
	cfg.Timeout = cmp0(cfg.Timeout, DefaultReplyTimeout)
	cfg.Budget = cmp0(cfg.Budget, 1)
	cfg.Interval = cmp0(cfg.Interval, DefaultInterval)
	p.link = cfg.Frame != nil
	p.devAlloc, _ = p.dev.(Allocator)
	switch {
	case p.size < StampLen:
		return bad("size %d is below %d bytes (the stamp)", p.size, StampLen)
	case !p.link && p.size > maxDatagram(cfg.Dst):
		return bad("size %d is over %d bytes, the largest UDP payload", p.size, maxDatagram(cfg.Dst))
	case cfg.Iters < 1 || cfg.Iters > MaxIters:
		return bad("%d iterations: want 1 to %d", cfg.Iters, MaxIters)
	case cfg.Duration < 0 || cfg.Timeout < 0 || cfg.Interval < 0:
		return bad("negative duration, timeout or interval")
	case cfg.Budget < 1:
		return bad("budget %d", cfg.Budget)
	case cfg.Dst.IsValid() && p.link:
		return bad("both a datagram destination and a frame template")
	}
	if cfg.Dst.IsValid() {
		ax, ok := p.dev.(AddrXmitter)
		if !ok {
			return bad("destination %v on a device that cannot address datagrams (no XmitTo)", cfg.Dst)
		}
		if cfg.Dst.Port() == 0 {
			return bad("destination %v has no port", cfg.Dst)
		}
		p.ax = ax
	}
	if p.link {
		if cfg.Frame.DestinationPort == 0 || cfg.Frame.SourcePort == 0 {
			return bad("frame ports %d -> %d: both must be set", cfg.Frame.SourcePort, cfg.Frame.DestinationPort)
		}
		t, err := newTemplate(cfg.Frame, p.size)
		if err != nil {
			return err
		}
		p.tmpl = t
	}
	p.run = rand.Uint32() | 1
	p.handler = p.handle
	return nil
}

func (p *pinger) send(seq uint64, ts int64) error {
	st := Stamp{Run: p.run, Seq: seq, Tstamp: ts}
	n := p.size
	if p.link {
		n = len(p.tmpl.frame)
	}
	var b *skb.Buff
	var err error
	if p.devAlloc != nil {
		b, err = p.devAlloc.Alloc(n)
	} else {
		b, err = p.cache.Alloc(n)
	}
	if err != nil {
		return err
	}
	d := b.Put(n)
	if p.link {
		p.tmpl.fill(d, p.cfg.Frame.DestinationPort, st)
		p.t0 = p.clk.now()
		return p.dev.Xmit(b, false)
	}
	PutStamp(d, st)
	clear(d[StampLen:])
	// The round trip starts here, with the request built, as the C
	// reference starts its clock with its buffer filled.
	p.t0 = p.clk.now()
	if p.ax != nil {
		return p.ax.XmitTo(b, p.cfg.Dst, false)
	}
	return p.dev.Xmit(b, false)
}

// countLate counts a late reply to the request seq: the warm-up's or a
// measured one's.
func (p *pinger) countLate(seq uint64) {
	if seq >= uint64(p.cfg.Warmup) {
		p.late[1]++
	} else {
		p.late[0]++
	}
}

// countLost counts a request without a reply in time: in Lost when it was
// measured, in WarmupLost when it was the warm-up's.
func (r *PingPongResult) countLost(measured bool) {
	if measured {
		r.Lost++
	} else {
		r.WarmupLost++
	}
}

func (p *pinger) handle(b *skb.Buff) {
	// The round trip ends at the hand-over, before the reply is examined,
	// as the C reference stops its clock when recv returns.
	t1 := p.clk.now()
	data := b.Data()
	off, plen := 0, b.Len()
	if p.link {
		f := &p.frame
		err := header.ParseFrameInto(data, f)
		if err != nil || f.PayloadOffset == 0 || f.Protocol != header.IPProtoUDP ||
			header.UDP(data[f.TransportOffset:]).DestinationPort() != p.cfg.Frame.SourcePort {
			p.stray++
			p.cache.Free(b)
			return
		}
		off = f.PayloadOffset
		plen = min(int(header.UDP(data[f.TransportOffset:]).Length())-header.UDPHeaderLen, len(data)-off)
	}
	var st Stamp
	var ok bool
	if off+StampLen <= len(data) {
		st, ok = ParseStamp(data[off:])
	} else if b.CopyBits(off, p.scratch[:]) == nil {
		st, ok = ParseStamp(p.scratch[:])
	}
	// A reply is the request's payload whole: one cut short or grown on
	// the way, its stamp intact, is no round trip of Size bytes.
	if ok && st.Run == p.run && st.Seq == p.want && !p.got && plen == p.size {
		p.got, p.t1 = true, t1
	} else {
		p.stray++
		if ok && st.Run == p.run {
			if plen != p.size {
				p.resized++
			} else if _, lost := p.lostSeqs[st.Seq]; lost {
				// The reply to a request given up on: late.
				p.countLate(st.Seq)
				delete(p.lostSeqs, st.Seq)
			}
		}
	}
	p.cache.Free(b)
}

// NoReplyTries is how many requests in a row, from the first, go
// unanswered before PingPong gives up with ErrNoReply: one lost request
// (a neighbour still being resolved on a link, a full queue) is a loss,
// not the absence of a server.
const NoReplyTries = 3

// noReply is ErrNoReply for n requests that got no reply within timeout,
// late of them a reply after it.
func noReply(n, late int, timeout time.Duration) error {
	after := ""
	if late > 0 {
		after = fmt.Sprintf(" (%d came later)", late)
	}
	if n == 1 {
		return fmt.Errorf("%w to 1 request within %v%s", ErrNoReply, timeout, after)
	}
	return fmt.Errorf("%w to %d requests, within %v each%s", ErrNoReply, n, timeout, after)
}

// errRunOver is await's report that the run's Duration ended while it
// waited.
var errRunOver = errors.New("traffic: pingpong: run over")

// await polls until the reply to p.want arrives (true, or false when it
// came later than the timeout after p.t0), the timeout passes since t0,
// when the request's clock was read (false), the run's Duration ends
// (errRunOver), or the device fails. Without BusyPoll it waits before
// each Poll that follows one that handed nothing over, the first
// included: a reply cannot be there yet when the request has just gone,
// and a device's Wait returns at once when it is, so the Poll that would
// find the queue empty is a system call saved on every round trip. A
// wait lasts waitSlice at most, and no longer than the timeout and the
// run have left at the last reading of the clock (t0 for the first).
// With BusyPoll it polls without waiting, reading the clock every 256th
// empty Poll; on a device that busy-polls itself (netdev.BusyPoller) it
// calls BusyPoll instead, for spinSlice at most, and reads the clock
// after each that found nothing.
func (p *pinger) await(t0 time.Duration, done <-chan struct{}) (bool, error) {
	n, idle := 0, 0 // idle: empty Polls so far
	left := min(p.cfg.Timeout, p.cfg.Duration-t0)
	for spins := 0; ; spins++ {
		if !p.cfg.BusyPoll && n == 0 {
			if err := p.dev.Wait(min(waitSlice, left)); err != nil && !errors.Is(err, netdev.ErrTimeout) {
				return false, err
			}
		}
		var err error
		if p.bp != nil {
			n, err = p.bp.BusyPoll(p.cfg.Budget, p.handler, min(spinSlice(p.yield), max(left, 0)))
		} else {
			n, err = p.dev.Poll(p.cfg.Budget, p.handler)
		}
		if err != nil {
			return false, err
		}
		if p.got {
			return p.t1-p.t0 <= p.cfg.Timeout, nil
		}
		if n > 0 {
			continue
		}
		if idle++; p.cfg.BusyPoll && p.yield && (p.bp != nil || idle%yieldEvery == 0) {
			runtime.Gosched()
		}
		if p.cfg.BusyPoll && p.bp == nil && spins&255 != 255 {
			continue
		}
		now := p.clk.now()
		if now >= p.cfg.Duration {
			return false, errRunOver
		}
		if now-t0 >= p.cfg.Timeout {
			return false, nil
		}
		left = min(p.cfg.Timeout-(now-t0), p.cfg.Duration-now)
		if done != nil {
			select {
			case <-done:
				return false, context.Canceled
			default:
			}
		}
	}
}

func (p *pinger) loop(ctx context.Context, res *PingPongResult) (PingPongResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	done := ctx.Done()
	cfg := &p.cfg
	rtt := make([]time.Duration, 0, cfg.Iters)
	// A first Poll, before the clock starts, posts the device's receive
	// buffers and makes what its copybreak copies come from, work that
	// would otherwise fall in the first round trip (milliseconds for a
	// pool class's first arena). Whatever it finds is stray.
	if _, err := p.dev.Poll(cfg.Budget, p.handler); err != nil {
		return *res, err
	}
	p.clk = newClock()
	deadline := cfg.Duration
	total := cfg.Warmup + cfg.Iters
	var tFirst, tLast time.Duration
	started, replied := false, false
	unanswered := 0 // requests without a reply; until the first reply, all of them
	var lastTick time.Duration
	tickFrom := 0
	var runErr error
	for i := 0; i < total; i++ {
		t0 := p.clk.now()
		if t0 >= deadline {
			break
		}
		p.want, p.got = uint64(i), false
		if err := p.send(uint64(i), p.clk.wall(t0)); err != nil {
			if errors.Is(err, pool.ErrExhausted) {
				res.countLost(i >= cfg.Warmup)
				continue
			}
			runErr = err
			break
		}
		if i >= cfg.Warmup && !started {
			// The span starts with the first measured request's clock,
			// after its buffer was allocated and built: an allocation
			// that fills the pool's cache is in no round trip.
			tFirst, started = p.t0, true
		}
		ok, err := p.await(t0, done)
		if errors.Is(err, context.Canceled) {
			break
		}
		if err == errRunOver {
			if !replied {
				runErr = fmt.Errorf("%w within %v, when the run's duration ended", ErrNoReply, min(cfg.Timeout, (deadline-t0).Round(time.Millisecond)))
			}
			break
		}
		if err != nil {
			runErr = err
			break
		}
		if !ok {
			res.countLost(i >= cfg.Warmup)
			if p.got {
				p.countLate(uint64(i))
			} else {
				if p.lostSeqs == nil {
					p.lostSeqs = make(map[uint64]struct{})
				}
				p.lostSeqs[uint64(i)] = struct{}{}
			}
			if unanswered++; !replied && unanswered >= NoReplyTries {
				runErr = noReply(unanswered, p.late[0]+p.late[1], cfg.Timeout)
				break
			}
			continue
		}
		replied = true
		t1 := p.t1
		if i >= cfg.Warmup {
			rtt = append(rtt, t1-p.t0)
			tLast = t1
		}
		if cfg.OnInterval != nil && t1-lastTick >= cfg.Interval {
			p.tick(t1, max(lastTick, tFirst), rtt[tickFrom:])
			lastTick, tickFrom = t1, len(rtt)
		}
		if done != nil {
			select {
			case <-done:
				i = total
			default:
			}
		}
	}
	if cfg.OnInterval != nil && len(rtt) > tickFrom {
		// The run's last interval, so that the intervals add up to the
		// result.
		p.tick(tLast, max(lastTick, tFirst), rtt[tickFrom:])
	}
	if runErr == nil && !replied && unanswered > 0 && ctx.Err() == nil {
		// A run of fewer than NoReplyTries requests, none answered.
		runErr = noReply(unanswered, p.late[0]+p.late[1], cfg.Timeout)
	}
	res.Stray, res.WarmupLate, res.Late, res.Resized = p.stray, p.late[0], p.late[1], p.resized
	res.Iters = len(rtt)
	if res.Iters == 0 {
		return *res, runErr
	}
	res.Seconds = (tLast - tFirst).Seconds()
	res.Bytes = uint64(p.size) * uint64(res.Iters) * 2
	usec := res.Seconds * 1e6
	if usec > 0 {
		res.Mbps = float64(res.Bytes) * 8 / usec
		res.UsecPerIter = usec / float64(res.Iters)
	}
	var sum time.Duration
	for _, d := range rtt {
		sum += d
	}
	slices.Sort(rtt)
	n := len(rtt)
	res.Min, res.Max = rtt[0], rtt[n-1]
	res.Mean = sum / time.Duration(n)
	res.P50, res.P90 = rtt[n/2], rtt[n*90/100]
	res.P99, res.P999 = rtt[n*99/100], rtt[n*999/1000]
	return *res, runErr
}

// tick reports the interval from..now, whose measured round trips are rtt.
func (p *pinger) tick(now, from time.Duration, rtt []time.Duration) {
	iv := PingPongInterval{Elapsed: now, Iters: len(rtt)}
	if len(rtt) > 0 {
		iv.UsecPerIter = float64(now-from) / float64(len(rtt)) / 1e3
		s := slices.Clone(rtt)
		slices.Sort(s)
		iv.P50 = s[len(s)/2]
	}
	p.cfg.OnInterval(iv)
}
