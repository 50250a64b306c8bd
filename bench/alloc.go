package bench

import (
	"context"
	"runtime"
	"time"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
	"github.com/skbdev/skb/traffic"
)

// allocWindow is how many buffers the allocation loop keeps in flight: a
// transmit ring's worth, so that a buffer lives as long as it would between
// its Xmit and its completion.
const allocWindow = 256

// runAllocLoop measures the allocation fast path on the sender CPU for
// e.memDuration: allocate a buffer of size bytes, write a stamp into it, and
// free the one allocated allocWindow buffers earlier. heap takes the data
// from make([]byte) for every packet (heapAlloc), otherwise from a pool
// Cache (seed 003). It reports ns/pkt, allocs/pkt (heap allocations per
// packet) and GC/Mpkt (garbage collections per million packets).
func runAllocLoop(ctx context.Context, e *env, heap bool, size int) (sample, error) {
	p, err := pool.New(pool.Config{Name: "bench alloc"})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	c := p.NewCache()
	defer c.Close()
	h := newHeapAlloc(skbHeadroom)
	alloc := c.Alloc
	free := c.Free
	if heap {
		alloc = h.Alloc
		free = func(b *skb.Buff) { b.Free() }
	}
	win := make([]*skb.Buff, allocWindow)
	var runErr error
	var packets uint64
	var secs float64
	var ms0, ms1 runtime.MemStats
	step := func(seq uint64) error {
		b, err := alloc(size)
		if err != nil {
			return err
		}
		traffic.PutStamp(b.Put(size), traffic.Stamp{Seq: seq})
		i := seq % allocWindow
		if old := win[i]; old != nil {
			free(old)
		}
		win[i] = b
		return nil
	}
	<-pinned(e.sender, func() {
		for i := range uint64(4 * allocWindow) {
			if runErr = step(i); runErr != nil {
				return
			}
		}
		runtime.ReadMemStats(&ms0)
		start := time.Now()
		deadline := start.Add(e.memDuration())
		for {
			if packets&1023 == 0 && (!time.Now().Before(deadline) || ctx.Err() != nil) {
				break
			}
			if runErr = step(packets); runErr != nil {
				return
			}
			packets++
		}
		secs = time.Since(start).Seconds()
		runtime.ReadMemStats(&ms1)
	})
	for i, b := range win {
		if b != nil {
			free(b)
			win[i] = nil
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	if packets == 0 || secs == 0 {
		return nil, errNoPackets("allocation loop")
	}
	return sample{
		"ns/pkt":     secs * 1e9 / float64(packets),
		"allocs/pkt": float64(ms1.Mallocs-ms0.Mallocs) / float64(packets),
		"GC/Mpkt":    float64(ms1.NumGC-ms0.NumGC) * 1e6 / float64(packets),
	}, nil
}
