package traffic

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skbdev/skb/netdev"
)

// RunSinks runs one Sink per device, each on a goroutine of its own (a
// device belongs to one goroutine; with cfg.Thread, on a thread of its
// own), with the same config, and merges
// their results: a sink for a range of UDP ports, one socket per port, as
// a generator's flows need on a datagram device. The bounds apply to the
// group: Count to the packets of all, Idle to the time since the last
// packet of any, Duration to each; ctx stops them all. OnInterval, when set, is called on the calling goroutine with
// the intervals of all running sinks added up. The error is the first
// sink's error, with the merged result of all.
func RunSinks(ctx context.Context, devs []netdev.Device, cfg SinkConfig) (SinkResult, error) {
	if len(devs) == 0 {
		return SinkResult{}, fmt.Errorf("traffic: sink: %w: no device", ErrConfig)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := cmp0(cfg.Idle, DefaultIdle)
	type report struct {
		k  int64
		iv SinkInterval
	}
	every := cmp0(cfg.Interval, DefaultInterval)
	reports := make(chan report, 64*len(devs))
	user := cfg.OnInterval
	sinks := make([]*Sink, len(devs))
	progs := make([]progress, len(devs))
	for i, d := range devs {
		c := cfg
		c.Idle, c.Count = -1, 0 // the group's, applied below
		if user != nil {
			c.OnInterval = func(iv SinkInterval) {
				k := int64((iv.Elapsed + every/2) / every)
				select {
				case reports <- report{k, iv}:
				default: // the caller is slow: drop the line, not the packets
				}
			}
		}
		s, err := NewSink(d, c)
		if err != nil {
			return SinkResult{}, err
		}
		s.progress = &progs[i]
		sinks[i] = s
	}
	errs := make([]error, len(devs))
	finished := make(chan int, len(devs))
	for i, s := range sinks {
		go func() {
			run := func() { _, errs[i] = s.Run(ctx) }
			if !cfg.Thread {
				run()
			} else if _, err := netdev.RunOnThread(-1, run); err != nil {
				run() // only pinning fails, and no CPU is asked for
			}
			finished <- i
		}()
	}
	pending := map[int64]*SinkInterval{}
	counts := map[int64]int{}
	running := len(devs)
	check := time.NewTicker(min(every, 50*time.Millisecond))
	defer check.Stop()
	flush := func() {
		for k, n := range counts {
			if n >= running {
				iv := pending[k]
				iv.PPS, iv.Mbps = rates(iv.Packets, iv.Bytes, iv.Seconds)
				_, iv.FrameMbps = rates(iv.Packets, iv.FrameBytes, iv.Seconds)
				user(*iv)
				delete(pending, k)
				delete(counts, k)
			}
		}
	}
	for running > 0 {
		select {
		case r := <-reports:
			acc := pending[r.k]
			if acc == nil {
				acc = &SinkInterval{Elapsed: r.iv.Elapsed, Seconds: r.iv.Seconds}
				pending[r.k] = acc
			}
			acc.Packets += r.iv.Packets
			acc.Bytes += r.iv.Bytes
			acc.FrameBytes += r.iv.FrameBytes
			acc.Lost += r.iv.Lost
			acc.Reordered += r.iv.Reordered
			acc.KernelDrops += r.iv.KernelDrops
			acc.Elapsed = max(acc.Elapsed, r.iv.Elapsed)
			counts[r.k]++
			flush()
		case <-finished:
			running--
			if running > 0 && user != nil {
				flush()
			}
		case now := <-check.C:
			var last int64
			var packets uint64
			for i := range progs {
				last = max(last, progs[i].last.Load())
				packets += progs[i].packets.Load()
			}
			if cfg.Count > 0 && packets >= cfg.Count ||
				last != 0 && idle > 0 && now.UnixNano()-last >= int64(idle) {
				cancel()
			}
		}
	}
	return mergeSinks(sinks), errors.Join(errs...)
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
	if !first.IsZero() {
		r.Seconds = last.Sub(first).Seconds()
	}
	r.PPS, r.Mbps = rates(r.Packets, r.Bytes, r.Seconds)
	_, r.FrameMbps = rates(r.Packets, r.FrameBytes, r.Seconds)
	r.Latency = lat.Summary()
	return r
}
