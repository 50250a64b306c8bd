package memring_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// BenchmarkXmitPoll moves packets from a to b on one goroutine: allocate and
// Xmit a burst (more=true but for the last), Poll it back, free it. One op is
// one packet. With a doorbell cost, burst 1 pays it per packet and burst 64
// once per 64 (seed 002); packets under the copybreak threshold (64 bytes)
// are copied on receive, the others handed over in their ring buffer
// (seed 001).
func BenchmarkXmitPoll(b *testing.B) {
	for _, cost := range []time.Duration{0, 300 * time.Nanosecond} {
		for _, burst := range []int{1, 64} {
			for _, size := range []int{64, 512, 1500, 9000} {
				name := fmt.Sprintf("doorbell=%v/burst=%d/size=%d", cost, burst, size)
				b.Run(name, func(b *testing.B) { benchXmitPoll(b, cost, burst, size) })
			}
		}
	}
}

func benchXmitPoll(b *testing.B, cost time.Duration, burst, size int) {
	p, err := pool.New(pool.Config{Name: "bench", Classes: []pool.Class{{Size: pool.SmallSize}, {Size: pool.FrameSize}, {Size: 16 << 10}}})
	if err != nil {
		b.Fatal(err)
	}
	tx, rx, err := memring.NewPair(memring.Config{Config: netdev.Config{Pool: p}, RxBufSize: 9000, DoorbellCost: cost})
	if err != nil {
		b.Fatal(err)
	}
	c, rc := tx.Cache(), rx.Cache()
	got := 0
	h := func(x *skb.Buff) { got++; rc.Free(x) }
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += burst {
		n := min(burst, b.N-i)
		for j := range n {
			x, err := c.Alloc(size)
			if err != nil {
				b.Fatal(err)
			}
			x.Put(size)
			if err := tx.Xmit(x, j < n-1); err != nil {
				b.Fatal(err)
			}
		}
		for got = 0; got < n; {
			if _, err := rx.Poll(n-got, h); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
	st := tx.Stats()
	b.ReportMetric(float64(st.TxPackets)/float64(max(1, st.TxDoorbells)), "pkts/doorbell")
	tx.Close()
	rx.Close()
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
}
