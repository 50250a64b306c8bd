package bench

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
	"github.com/skbdev/skb/traffic"
)

// skbHeadroom is the default headroom of skb's buffers, in bytes.
const skbHeadroom = skb.DefaultHeadroom

// DoorbellCost is the doorbell the doorbell experiment gives memring: about
// what an AF_XDP kick (a sendto system call) cost on the machines skb was
// first measured on.
const DoorbellCost = 300 * time.Nanosecond

// memDuration is how long a hermetic memring run lasts: a quarter of a
// socket run, which is plenty for a loop with no kernel in it.
func (e *env) memDuration() time.Duration { return max(e.dur/4, time.Millisecond) }

// memLoop is a hermetic run over a memring pair on one thread (the sender
// CPU): allocate a burst of packets, transmit them (one doorbell per
// burst), poll them back and free them, or keep the last hold of them
// before freeing (a receiver that queues packets).
type memLoop struct {
	cfg   memring.Config
	size  int
	burst int
	hold  int
	// headroom, when not negative, is the headroom of the pool, and an
	// EncapLen-byte header is pushed on every packet before transmit.
	headroom int
	// classes, when set, are the pool's size classes.
	classes []pool.Class
}

// runMemLoop runs m for e.memDuration and returns its figures: pps and
// ns/pkt, with "held B/pkt" when it holds packets and "reallocs/pkt" when it
// encapsulates.
func runMemLoop(ctx context.Context, e *env, m memLoop) (sample, error) {
	pcfg := pool.Config{Name: "bench memring", Classes: m.classes}
	if m.headroom >= 0 {
		pcfg.Headroom = m.headroom
		if m.headroom == 0 {
			pcfg.Headroom = pool.NoHeadroom
		}
	}
	p, err := pool.New(pcfg)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	cfg := m.cfg
	cfg.Pool = p
	cfg.Batch = max(m.burst, netdev.DefaultBatch)
	a, b, err := memring.NewPair(cfg)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	defer a.Close()

	var enc *encapsulator
	if m.headroom >= 0 {
		enc = newEncapsulator(a.Cache())
	}
	ac, bc := a.Cache(), b.Cache()
	held := make([]*skb.Buff, m.hold)
	hi := 0
	var heldBytes, got uint64
	handler := func(x *skb.Buff) {
		got++
		heldBytes += uint64(len(x.Head()))
		if m.hold == 0 {
			bc.Free(x)
			return
		}
		if old := held[hi]; old != nil {
			bc.Free(old)
		}
		held[hi] = x
		hi = (hi + 1) % m.hold
	}
	var runErr error
	var packets uint64
	var secs float64
	var ms0, ms1 runtime.MemStats
	step := func() error {
		for j := range m.burst {
			x, err := ac.Alloc(m.size)
			if err != nil {
				return err
			}
			traffic.PutStamp(x.Put(m.size), traffic.Stamp{Seq: packets})
			if enc != nil {
				if err := enc.push(x); err != nil {
					ac.Free(x)
					return err
				}
			}
			if err := a.Xmit(x, j < m.burst-1); err != nil {
				return err
			}
		}
		for want := got + uint64(m.burst); got < want; {
			n, err := b.Poll(int(want-got), handler)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("memring: %d packets sent, %d received", m.burst, m.burst-int(want-got))
			}
		}
		packets += uint64(m.burst)
		return nil
	}
	<-pinned(e.sender, func() {
		// Warm up: the caches fill and the pool grows to its working set.
		for range 4 * max(1, m.hold/m.burst) {
			if runErr = step(); runErr != nil {
				return
			}
		}
		packets, got, heldBytes = 0, 0, 0
		if enc != nil {
			enc.packets, enc.reallocs = 0, 0
		}
		runtime.ReadMemStats(&ms0)
		start := time.Now()
		deadline := start.Add(e.memDuration())
		for i := 0; ; i++ {
			if i&15 == 0 && (!time.Now().Before(deadline) || ctx.Err() != nil) {
				break
			}
			if runErr = step(); runErr != nil {
				return
			}
		}
		secs = time.Since(start).Seconds()
		runtime.ReadMemStats(&ms1)
	})
	for i, x := range held {
		if x != nil {
			bc.Free(x)
			held[i] = nil
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	if packets == 0 || secs == 0 {
		return nil, errNoPackets("memring")
	}
	s := sample{
		"pps":        float64(packets) / secs,
		"ns/pkt":     secs * 1e9 / float64(packets),
		"allocs/pkt": float64(ms1.Mallocs-ms0.Mallocs) / float64(packets),
	}
	if m.hold > 0 {
		s["held B/pkt"] = float64(heldBytes) / float64(got)
	}
	if enc != nil && enc.packets > 0 {
		s["reallocs/pkt"] = float64(enc.reallocs) / float64(enc.packets)
	}
	return s, nil
}

// memVariant returns a variant running m.
func memVariant(name, ref string, m memLoop) variant {
	return variant{name: name, ref: ref, run: func(ctx context.Context, e *env) (sample, error) {
		return runMemLoop(ctx, e, m)
	}}
}

// pingMem runs a ping-pong over a memring pair: Echo spinning on the
// receiver CPU, PingPong busy-polling on the sender CPU, size-byte requests,
// with or without a clone per send (memring's CloneOnXmit, seed 000).
func pingMem(ctx context.Context, e *env, size int, clone bool) (sample, error) {
	p, err := pool.New(pool.Config{Name: "bench memring ping",
		Classes: []pool.Class{{Size: pool.SmallSize}, {Size: pool.FrameSize}, {Size: 8 << 10}}})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	a, b, err := memring.NewPair(memring.Config{
		Config:      netdev.Config{Pool: p},
		RxBufSize:   max(size, memring.DefaultRxBufSize),
		RingSize:    64,
		CloneOnXmit: clone,
	})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	defer a.Close()
	return runPing(ctx, e, b, a, "memring ping-pong", traffic.PingPongConfig{
		Size: size, Iters: pingIters(e.memDuration(), 250*time.Nanosecond), Warmup: 10,
		Duration: max(e.memDuration(), 50*time.Millisecond), BusyPoll: true,
	}, netip.Prefix{})
}
