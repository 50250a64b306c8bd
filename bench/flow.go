package bench

import (
	"context"
	"runtime"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
	"github.com/skbdev/skb/traffic"
)

// flowResult is what one generator -> sink run measured.
type flowResult struct {
	gen  traffic.PktgenResult
	sink traffic.SinkResult
	// txCPU and rxCPU are the CPU times of the sending and receiving
	// threads.
	txCPU, rxCPU time.Duration
	// allocs is the process's heap allocations per packet sent in the
	// middle half of the run (steady state); gcs the garbage collections
	// over the whole run.
	allocs float64
	gcs    uint32
}

// sample returns the figures every flow experiment may report.
func (r flowResult) sample() sample {
	s := sample{
		"tx pps":     r.gen.PPS,
		"allocs/pkt": r.allocs,
	}
	if r.gen.Packets > 0 {
		s["tx cpu"] = float64(r.txCPU.Nanoseconds()) / float64(r.gen.Packets)
		s["GC/Mpkt"] = float64(r.gcs) * 1e6 / float64(r.gen.Packets)
	}
	if r.sink.Packets > 0 {
		s["rx pps"] = r.sink.PPS
		s["rx cpu"] = float64(r.rxCPU.Nanoseconds()) / float64(r.sink.Packets)
	}
	return s
}

// flowSpec is a generator -> sink run over two open devices, or a generator
// alone when rx is nil (the receiver is another program, or nothing).
type flowSpec struct {
	tx, rx netdev.Device
	gen    traffic.PktgenConfig
	sink   traffic.SinkConfig
	// rxCount reads the receiver's count of packets (its device
	// counters, safe from any goroutine): the run ends once it stops
	// growing after the generator is done.
	rxCount func() uint64
}

// runFlow runs the sink on the receiver CPU and the generator on the sender
// CPU for e.dur, each on a thread with a private descriptor table as the
// skb tool runs them (datapath), then waits until the receiver has taken in what is still
// queued, and stops the sink.
func runFlow(ctx context.Context, e *env, fs flowSpec) (flowResult, error) {
	var res flowResult
	fs.gen.Duration = e.dur
	fs.sink.Duration = e.dur + 10*time.Second
	fs.sink.Idle = -1
	g, err := traffic.NewPktgen(fs.tx, fs.gen)
	if err != nil {
		return res, err
	}
	defer g.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var sinkErr error
	var rxDone <-chan time.Duration
	if fs.rx != nil {
		s, err := traffic.NewSink(fs.rx, fs.sink)
		if err != nil {
			return res, err
		}
		started := make(chan struct{})
		rxDone = datapath(e.receiver, func() {
			close(started)
			res.sink, sinkErr = s.Run(sctx)
		})
		<-started
	}

	var ms0, ms1, ms2 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	monDone := make(chan struct{})
	var tx1, tx2 uint64
	go func() { // the middle half of the run: steady state
		defer close(monDone)
		t := time.NewTimer(e.dur / 4)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		runtime.ReadMemStats(&ms1)
		tx1 = fs.tx.Stats().TxPackets
		t.Reset(e.dur / 2)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		runtime.ReadMemStats(&ms2)
		tx2 = fs.tx.Stats().TxPackets
	}()

	var genErr error
	res.txCPU = <-datapath(e.sender, func() { res.gen, genErr = g.Run(ctx) })
	<-monDone
	if fs.rx != nil {
		// Let the receiver drain what the sockets still hold: stop once
		// its count has not moved for two looks 20 ms apart.
		last, still := fs.rxCount(), 0
		for deadline := time.Now().Add(2 * time.Second); still < 2 && time.Now().Before(deadline) && ctx.Err() == nil; {
			time.Sleep(20 * time.Millisecond)
			if n := fs.rxCount(); n == last {
				still++
			} else {
				last, still = n, 0
			}
		}
		stop()
		res.rxCPU = <-rxDone
	}
	var msEnd runtime.MemStats
	runtime.ReadMemStats(&msEnd)
	res.gcs = msEnd.NumGC - ms0.NumGC
	if tx2 > tx1 {
		res.allocs = float64(ms2.Mallocs-ms1.Mallocs) / float64(tx2-tx1)
	}
	if err := firstErr(genErr, sinkErr); err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.gen.Packets == 0 || fs.rx != nil && res.sink.Packets == 0 {
		return res, errNoPackets("generator -> sink")
	}
	return res, nil
}

// heldMeter is a receiving device that notes how much pool memory each
// received buffer holds (its data block, len(Head)): what a receiver that
// queues packets keeps per packet (seed 001).
type heldMeter struct {
	netdev.Device
	h       netdev.Handler
	handler netdev.Handler
	bytes   uint64
	packets uint64
}

func newHeldMeter(d netdev.Device) *heldMeter {
	m := &heldMeter{Device: d}
	m.handler = m.handle
	return m
}

// Poll is the device's Poll, noting each buffer's block size on the way.
func (m *heldMeter) Poll(budget int, h netdev.Handler) (int, error) {
	m.h = h
	return m.Device.Poll(budget, m.handler)
}

func (m *heldMeter) handle(b *skb.Buff) {
	m.bytes += uint64(len(b.Head()))
	m.packets++
	m.h(b)
}

func (m *heldMeter) perPacket() float64 {
	if m.packets == 0 {
		return 0
	}
	return float64(m.bytes) / float64(m.packets)
}
