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
				cfg := memring.Config{DoorbellCost: cost}
				b.Run(name, func(b *testing.B) { benchXmitPoll(b, cfg, burst, size) })
			}
		}
	}
}

// BenchmarkCloneOnXmit measures seed 000: transmitting the caller's buffer
// (clone=false) against transmitting a clone and freeing the original, as
// rxe did before the patch.
func BenchmarkCloneOnXmit(b *testing.B) {
	for _, clone := range []bool{false, true} {
		for _, size := range []int{64, 1500} {
			name := fmt.Sprintf("clone=%v/size=%d", clone, size)
			cfg := memring.Config{CloneOnXmit: clone}
			b.Run(name, func(b *testing.B) { benchXmitPoll(b, cfg, 64, size) })
		}
	}
}

// BenchmarkCopybreak measures seed 001 on memring: small packets copied into
// a right-sized buffer with the ring buffer reposted at once (on), against
// the ring buffer handed over and a fresh one posted (off).
func BenchmarkCopybreak(b *testing.B) {
	for _, cb := range []int{0, netdev.CopybreakOff} {
		for _, size := range []int{64, 200} {
			name := fmt.Sprintf("copybreak=%v/size=%d", cb == 0, size)
			cfg := memring.Config{Config: netdev.Config{Copybreak: cb}}
			b.Run(name, func(b *testing.B) { benchXmitPoll(b, cfg, 64, size) })
		}
	}
}

// benchXmitPoll moves b.N packets of size bytes in bursts through a pair
// made with cfg, on one goroutine.
func benchXmitPoll(b *testing.B, cfg memring.Config, burst, size int) {
	p, err := pool.New(pool.Config{Name: "bench", Classes: []pool.Class{{Size: pool.SmallSize}, {Size: pool.FrameSize}, {Size: 16 << 10}}})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Pool = p
	cfg.RxBufSize = 9000
	tx, rx, err := memring.NewPair(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, rc := tx.Cache(), rx.Cache()
	got := 0
	h := func(x *skb.Buff) { got++; rc.Free(x) }
	// run moves packets packets in bursts.
	run := func(packets int) {
		for i := 0; i < packets; i += burst {
			n := min(burst, packets-i)
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
	}
	run(4 * burst) // warm up: the caches fill, the pool has grown
	before := tx.Stats()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pps")
	st := tx.Stats().Sub(before)
	b.ReportMetric(float64(st.TxPackets)/float64(max(1, st.TxDoorbells)), "pkts/doorbell")
	tx.Close()
	rx.Close()
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
}
