package traffic

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// sent is one packet a recorder was handed: its stamp without the send
// time, its length, its destination (zero from Xmit) and more; a Flush is
// recorded as the zero sent with flush set.
type sent struct {
	flow  uint32
	seq   uint64
	size  int
	dst   netip.AddrPort
	more  bool
	flush bool
}

// recorder is a datagram device that records what it is handed and frees
// it. Every failEvery-th packet (0: none) it refuses with errRefused, and
// from the closeAt-th on (0: never) with netdev.ErrClosed.
type recorder struct {
	t         testing.TB
	c         *pool.Cache
	ctr       netdev.Counters
	log       []sent
	n         int
	failEvery int
	closeAt   int
	stamped   bool // want a send time in every stamp (none without)
	bad       int
	// hold keeps the buffers handed over until Flush (their completion);
	// flushFails makes Flush return errRefused after freeing them.
	hold       bool
	held       []*skb.Buff
	flushFails bool
}

var errRefused = errors.New("recorder: refused")

func newRecorder(t testing.TB, cfg pool.Config) *recorder {
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &recorder{t: t, c: p.NewCache()}
	t.Cleanup(func() {
		d.c.Close()
		if err := p.Close(); err != nil {
			t.Errorf("pool close: %v", err)
		}
	})
	return d
}

func (d *recorder) Xmit(b *skb.Buff, more bool) error {
	return d.XmitTo(b, netip.AddrPort{}, more)
}

func (d *recorder) XmitTo(b *skb.Buff, dst netip.AddrPort, more bool) error {
	if d.hold {
		d.held = append(d.held, b)
	} else {
		defer d.c.Free(b)
	}
	d.n++
	if d.closeAt > 0 && d.n >= d.closeAt {
		d.ctr.TxDrop(netdev.DropClosed, 1)
		return netdev.ErrClosed
	}
	if d.failEvery > 0 && d.n%d.failEvery == 0 {
		d.ctr.TxDrop(netdev.DropError, 1)
		return errRefused
	}
	st, ok := ParseStamp(b.Data())
	if !ok || st.Run != 7 || (st.Tstamp > time.Now().UnixNano()-int64(time.Minute)) != d.stamped {
		if d.bad++; d.bad <= 5 {
			d.t.Errorf("packet %d: stamp %+v, %v; want a send time: %v", d.n, st, ok, d.stamped)
		}
	}
	d.log = append(d.log, sent{flow: st.Flow, seq: st.Seq, size: b.Len(), dst: dst, more: more})
	if more {
		d.ctr.TxSent(1, b.Len())
	} else {
		d.ctr.TxDoorbell(1, b.Len())
	}
	return nil
}

func (d *recorder) Flush() error {
	d.log = append(d.log, sent{flush: true})
	for _, b := range d.held {
		d.c.Free(b)
	}
	d.held = d.held[:0]
	if d.flushFails {
		return errRefused
	}
	return nil
}

func (d *recorder) Src() netip.AddrPort                            { return netip.AddrPort{} }
func (d *recorder) TxAvail() int                                   { return netdev.DefaultBatch }
func (d *recorder) Poll(budget int, h netdev.Handler) (int, error) { return 0, nil }
func (d *recorder) Wait(timeout time.Duration) error               { return netdev.ErrTimeout }
func (d *recorder) Cache() *pool.Cache                             { return d.c }
func (d *recorder) Stats() netdev.Stats                            { return d.ctr.Snapshot() }
func (d *recorder) Close() error                                   { return nil }

// TestPktgenPlainBursts checks that a run on the plain path (plainBursts:
// datagrams built afresh) hands the device the same packets, in the same
// order, with the same more flags and flushes, and ends with the same
// result and error as the same run on the general path (burst, next and
// build), with and without send times, also with a rate, when sends fail,
// when the device closes partway through, when the pool runs out partway
// through a burst (and the Flush that follows fails) and when a size does
// not fit the pool.
func TestPktgenPlainBursts(t *testing.T) {
	dst := netip.MustParseAddrPort("198.18.0.2:9000")
	small := pool.Config{Classes: []pool.Class{{Size: 1024}}}
	// Eight buffers: with the device holding five a burst until Flush,
	// the second burst runs out at its fourth.
	bounded := pool.Config{Classes: []pool.Class{{Size: 2048, Max: 8}}}
	tests := []struct {
		name      string
		cfg       PktgenConfig
		pool      pool.Config
		failEvery int
		closeAt   int
		hold      bool // the device frees what it was handed at Flush only
		flushFail bool
	}{
		{name: "burst 1", cfg: PktgenConfig{Count: 300}},
		{name: "burst 5, count not a multiple", cfg: PktgenConfig{Count: 203, Burst: 5}},
		{name: "burst 64", cfg: PktgenConfig{Count: 1000, Burst: 64}},
		{name: "imix, 3 flows of 2", cfg: PktgenConfig{Count: 500, Burst: 3, IMIX: DefaultIMIX, Flows: 3, FlowLen: 2}},
		{name: "flows to ports", cfg: PktgenConfig{Count: 400, Burst: 4, Flows: 5, Dst: dst}},
		{name: "failing sends", cfg: PktgenConfig{Count: 500, Burst: 4, Flows: 2}, failEvery: 7},
		{name: "failing sends, burst 1", cfg: PktgenConfig{Count: 300}, failEvery: 3},
		{name: "flows to ports, short last burst", cfg: PktgenConfig{Count: 403, Burst: 4, Flows: 7, FlowLen: 3, Dst: dst, IMIX: DefaultIMIX}},
		{name: "rate", cfg: PktgenConfig{Count: 300, Burst: 4, Rate: 2e6}},
		{name: "pool exhausted partway through bursts", cfg: PktgenConfig{Count: 200, Burst: 5}, pool: bounded, hold: true},
		{name: "pool exhausted, failing flush", cfg: PktgenConfig{Count: 200, Burst: 5}, pool: bounded, hold: true, flushFail: true},
		{name: "every send fails", cfg: PktgenConfig{Count: 500, Burst: 3}, failEvery: 1},
		{name: "closed partway", cfg: PktgenConfig{Count: 500, Burst: 8}, closeAt: 150},
		{name: "size over the pool", cfg: PktgenConfig{Count: 500, Burst: 4, IMIX: []IMIXEntry{{64, 5}, {1400, 1}}}, pool: small},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, stamped := range []bool{false, true} {
				var logs [2][]sent
				var res [2]string
				for i, general := range []bool{false, true} {
					d := newRecorder(t, tc.pool)
					d.failEvery, d.closeAt, d.stamped = tc.failEvery, tc.closeAt, stamped
					d.hold, d.flushFails = tc.hold, tc.flushFail
					cfg := tc.cfg
					cfg.Run, cfg.NoTimestamp, cfg.Duration = 7, !stamped, time.Minute
					g, err := NewPktgen(d, cfg)
					if err != nil {
						t.Fatal(err)
					}
					g.noPlain = general
					r, err := g.Run(context.Background())
					r.Seconds, r.PPS, r.Mbps, r.FrameMbps = 0, 0, 0, 0
					res[i] = fmt.Sprintf("%+v, %v", r, err)
					logs[i] = d.log
					if d.n == 0 {
						t.Fatal("nothing sent")
					}
				}
				if res[0] != res[1] {
					t.Errorf("stamped %v: plain path: %s\ngeneral path: %s", stamped, res[0], res[1])
				}
				if !slices.Equal(logs[0], logs[1]) {
					n := min(len(logs[0]), len(logs[1]))
					k := 0
					for k < n && logs[0][k] == logs[1][k] {
						k++
					}
					t.Errorf("stamped %v: the paths differ from packet %d on (of %d and %d): plain %+v, general %+v", stamped,
						k, len(logs[0]), len(logs[1]), logs[0][k:min(k+3, len(logs[0]))], logs[1][k:min(k+3, len(logs[1]))])
				}
			}
		})
	}
}

// TestPktgenPlainAllocs checks that the plain path allocates nothing per
// packet.
func TestPktgenPlainAllocs(t *testing.T) {
	d := newRecorder(t, pool.Config{})
	d.log = make([]sent, 0, 1<<16)
	g, err := NewPktgen(d, PktgenConfig{Run: 7, Burst: 1, NoTimestamp: true, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var over atomic.Bool
	g.clockStep = 64
	allocs := testing.AllocsPerRun(100, func() {
		g.unclocked = 0
		if n, err := g.plainBursts(&over, 0, 1); n != 64 || err != nil {
			t.Fatalf("plainBursts: %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 64 packets", allocs)
	}
}

// TestPktgenStoppedInWarmUp checks that a run whose ctx ends before or
// during the warm-up sends nothing and returns no error, with every
// buffer the warm-up took back in the pool.
func TestPktgenStoppedInWarmUp(t *testing.T) {
	d := newRecorder(t, pool.Config{})
	g, err := NewPktgen(d, PktgenConfig{Run: 7, Burst: 64, Size: 1000, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := d.c.Pool()
	in0 := p.Stats().InFlight()
	r, err := g.Run(ctx)
	if err != nil || r.Packets != 0 || r.Queued != 0 || d.n != 0 {
		t.Errorf("run stopped before it began: %+v, %v; %d handed to the device", r, err, d.n)
	}
	if in := p.Stats().InFlight(); in != in0 {
		t.Errorf("buffers in flight %d -> %d", in0, in)
	}
}
