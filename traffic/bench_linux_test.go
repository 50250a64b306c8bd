package traffic

import (
	"fmt"
	"testing"

	"github.com/skbdev/skb/driver/udp"
)

// BenchmarkBuild measures what the generator costs per datagram to lay out
// and stamp a packet, without sending it: one datagram per buffer, and a
// GSO super-packet of 64 datagrams. The buffer is freed at once.
func BenchmarkBuild(b *testing.B) {
	for _, segs := range []int{1, 64} {
		b.Run(fmt.Sprintf("size=64/segs=%d", segs), func(b *testing.B) {
			// A peer to connect to; nothing is sent.
			peer := openUDP(b, udp.Config{Local: lo4})
			d := openUDP(b, udp.Config{Local: lo4, Remote: peer.LocalAddr(), GSO: segs > 1})
			g, err := NewPktgen(d, PktgenConfig{Size: 64, Burst: segs, GSO: segs > 1})
			if err != nil {
				b.Fatal(err)
			}
			c := d.Cache()
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				p, n, err := g.build(0, segs, int64(done))
				if err != nil {
					b.Fatal(err)
				}
				c.Free(p)
				done += n
			}
		})
	}
}
