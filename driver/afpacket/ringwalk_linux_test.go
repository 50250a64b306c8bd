package afpacket

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/ring"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// fakeRing returns count blocks of bs bytes, 8-byte aligned as the
// kernel's mapping is, for a Device without a socket.
func fakeRing(bs, count int) []byte {
	w := make([]uint64, bs*count/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), bs*count)
}

// TestRingWalkMalformed hands Poll blocks the kernel never writes (a first
// frame's offset outside the block, no frame at all, a second frame's
// offset outside it) and a handler that panics: Poll must return, count
// the drop, hand each block back, deliver the good frame once, and keep
// its ring counts.
func TestRingWalkMalformed(t *testing.T) {
	const bs, count = 4096, 2
	for _, tc := range []string{"bad first offset", "first offset at the block's end", "empty", "bad second offset", "handler panics"} {
		t.Run(tc, func(t *testing.T) {
			p, err := pool.New(pool.Config{Debug: true, Name: t.Name()})
			if err != nil {
				t.Fatal(err)
			}
			c := p.NewCache()
			d := &Device{cache: c, fullSize: pool.FrameSize - c.Headroom()}
			d.rx = fakeRing(bs, count)
			d.g.blockSize, d.g.blockCount = bs, count
			blk := d.rx[:bs]
			ring.Store32(d.rx, bdStatus, unix.TP_STATUS_USER)
			frame := func(off, next int) {
				h := blk[off:]
				ne.PutUint32(h[hNext:], uint32(next))
				ne.PutUint32(h[hSnaplen:], 60)
				ne.PutUint32(h[hLen:], 60)
				ne.PutUint16(h[hMac:], 80)
			}
			switch tc {
			case "bad first offset":
				ne.PutUint32(blk[bdNumPkts:], 1)
				ne.PutUint32(blk[bdFirstPkt:], 4)
			case "first offset at the block's end":
				// Room for the tpacket3_hdr, not for the sockaddr_ll
				// behind it, whose packet type is read.
				ne.PutUint32(blk[bdNumPkts:], 1)
				ne.PutUint32(blk[bdFirstPkt:], bs-hSize)
			case "empty":
				ne.PutUint32(blk[bdFirstPkt:], 64)
			case "bad second offset":
				ne.PutUint32(blk[bdNumPkts:], 2)
				ne.PutUint32(blk[bdFirstPkt:], 64)
				frame(64, 1<<20)
			case "handler panics":
				ne.PutUint32(blk[bdNumPkts:], 1)
				ne.PutUint32(blk[bdFirstPkt:], 64)
				frame(64, 0)
			}
			got := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range 2 {
					func() {
						defer func() {
							if r := recover(); r != nil && r != "panics" {
								panic(r)
							}
						}()
						d.Poll(64, func(b *skb.Buff) {
							got++
							b.Free()
							if tc == "handler panics" {
								panic("panics")
							}
						})
					}()
				}
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Poll did not return in 5 s")
			}
			if st := ring.Load32(d.rx, bdStatus); st != unix.TP_STATUS_KERNEL {
				t.Errorf("block status %#x: not handed back", st)
			}
			if want := map[string]int{"bad second offset": 1, "handler panics": 1}[tc]; got != want {
				t.Errorf("%d frames handed over; want %d", got, want)
			}
			if rs := d.RingStats(); rs.RxBlocks != 1 {
				t.Errorf("%+v: want 1 block", rs)
			}
			c.Close()
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}
