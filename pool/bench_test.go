package pool_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

func benchPool(b *testing.B) (*pool.Pool, *pool.Cache) {
	b.Helper()
	p, err := pool.New(pool.Config{Name: b.Name()})
	if err != nil {
		b.Fatal(err)
	}
	c := p.NewCache()
	b.Cleanup(func() {
		c.Close()
		if err := p.Close(); err != nil {
			b.Error(err)
		}
	})
	return p, c
}

// BenchmarkAllocFree allocates and frees one buffer of the 2 KiB class through
// a per-worker cache.
func BenchmarkAllocFree(b *testing.B) {
	_, c := benchPool(b)
	b.ReportAllocs()
	b.SetBytes(1500)
	rounds(b, func(k int) {
		for range k {
			x, err := c.Alloc(1500)
			if err != nil {
				b.Fatal(err)
			}
			c.Free(x)
		}
	})
}

// rounds runs b.N operations as calls fn(k) of k = 10000 operations each and
// reports, besides ns/op, the median of the rounds' ns/op: on these 2-vCPU
// machines a round runs up to twice as slow while the other vCPU is busy, and
// the median keeps what the code costs when it has the core to itself.
func rounds(b *testing.B, fn func(k int)) {
	const round = 10000
	var per []float64
	for n := b.N; n > 0; n -= round {
		k := min(n, round)
		t0 := time.Now()
		fn(k)
		per = append(per, float64(time.Since(t0))/float64(k))
	}
	b.ReportMetric(median(per), "median-ns/op")
}

// BenchmarkSyncPool is the baseline: sync.Pool Get and Put of a 2 KiB buffer.
func BenchmarkSyncPool(b *testing.B) {
	sp := sync.Pool{New: func() any { s := make([]byte, 2048); return &s }}
	b.ReportAllocs()
	b.SetBytes(1500)
	rounds(b, func(k int) {
		for range k {
			x := sp.Get().(*[]byte)
			sp.Put(x)
		}
	})
}

var sink []byte

// BenchmarkMake is the garbage-collected baseline: make([]byte, 2048).
func BenchmarkMake(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(1500)
	for b.Loop() {
		sink = make([]byte, 2048)
	}
}

// BenchmarkClone clones a buffer and frees the clone (Cache.Clone, the fast
// path; BenchmarkCloneAllocator measures skb's Clone through the interface).
func BenchmarkClone(b *testing.B) {
	_, c := benchPool(b)
	x, _ := c.Alloc(1500)
	x.Put(1500)
	b.ReportAllocs()
	rounds(b, func(k int) {
		for range k {
			c.Free(c.Clone(x))
		}
	})
	c.Free(x)
}

// BenchmarkBulkAllocFree allocates and frees 64 buffers at a time; the time is
// per buffer.
func BenchmarkBulkAllocFree(b *testing.B) {
	_, c := benchPool(b)
	bs := make([]*skb.Buff, 64)
	b.ReportAllocs()
	b.SetBytes(1500)
	for i := 0; i < b.N; i += len(bs) {
		if _, err := c.AllocN(bs, 1500); err != nil {
			b.Fatal(err)
		}
		c.FreeN(bs)
	}
}

// BenchmarkPushPull pushes and pulls a 42-byte Ethernet+IPv4+UDP header.
func BenchmarkPushPull(b *testing.B) {
	_, c := benchPool(b)
	x, _ := c.Alloc(1500)
	x.Put(1000)
	b.ReportAllocs()
	rounds(b, func(k int) {
		for range k {
			h := x.Push(42)
			h[0] = 1
			x.Pull(42)
		}
	})
	c.Free(x)
}

// BenchmarkCloneAllocator is BenchmarkClone through skb.Buff.Clone and the
// skb.Allocator interface.
func BenchmarkCloneAllocator(b *testing.B) {
	_, c := benchPool(b)
	x, _ := c.Alloc(1500)
	x.Put(1500)
	b.ReportAllocs()
	for b.Loop() {
		n, err := x.Clone(c)
		if err != nil {
			b.Fatal(err)
		}
		c.Free(n)
	}
	c.Free(x)
}

// BenchmarkAllocFreeVsSyncPool measures AllocFree and SyncPool in alternating
// rounds of 20000 operations within one benchmark, so that both see the same
// machine (these 2-vCPU machines run twice as slow while the other vCPU is
// busy), and reports each one's median ns/op and the median of the
// per-round ratios (ratio: AllocFree time / SyncPool time). The issue's
// target is ratio <= 0.7.
func BenchmarkAllocFreeVsSyncPool(b *testing.B) {
	_, c := benchPool(b)
	sp := sync.Pool{New: func() any { s := make([]byte, 2048); return &s }}
	const round = 20000
	var ours, theirs, ratios []float64
	b.ReportAllocs()
	for i := 0; i < b.N; i += 2 * round {
		t0 := time.Now()
		for range round {
			x, err := c.Alloc(1500)
			if err != nil {
				b.Fatal(err)
			}
			c.Free(x)
		}
		t1 := time.Now()
		for range round {
			x := sp.Get().(*[]byte)
			sp.Put(x)
		}
		t2 := time.Now()
		a, s := float64(t1.Sub(t0))/round, float64(t2.Sub(t1))/round
		ours, theirs, ratios = append(ours, a), append(theirs, s), append(ratios, a/s)
	}
	b.ReportMetric(median(ours), "skb-ns/op")
	b.ReportMetric(median(theirs), "syncpool-ns/op")
	b.ReportMetric(median(ratios), "ratio")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkRing models a receive ring: 2048 buffers are posted at a time,
// and each operation takes the oldest, receives 64 bytes into it, reads
// them, frees it and posts a fresh buffer in its place, as an AF_XDP
// receiver does with its fill ring. The ring holds the buffers in a
// shuffled order, as a ring does after the pool's stacks have mixed them,
// so that the hardware prefetcher cannot follow; the buffers in flight span
// more than a second-level cache, so this measures the cache lines a
// buffer's header and shared info cost per packet.
func BenchmarkRing(b *testing.B) {
	const posted = 2048
	_, c := benchPool(b)
	ring := make([]*skb.Buff, posted)
	for i := range ring {
		x, err := c.Alloc(1500)
		if err != nil {
			b.Fatal(err)
		}
		ring[i] = x
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(posted, func(i, j int) { ring[i], ring[j] = ring[j], ring[i] })
	b.Cleanup(func() {
		for _, x := range ring {
			c.Free(x)
		}
	})
	b.ReportAllocs()
	var sum int
	i := 0
	rounds(b, func(k int) {
		for range k {
			x := ring[i]
			d := x.Put(64)
			sum += int(d[0]) + x.Len() + x.Headroom()
			c.Free(x)
			y, err := c.Alloc(1500)
			if err != nil {
				b.Fatal(err)
			}
			ring[i] = y
			if i++; i == posted {
				i = 0
			}
		}
	})
	if sum < 0 {
		b.Log(sum)
	}
}
