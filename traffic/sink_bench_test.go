package traffic

import (
	"net/netip"
	"testing"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/header"
)

// BenchmarkSinkHandle measures what the sink does per frame on a
// link-layer device (afpacket, afxdp): parse the Ethernet, IPv4 and UDP
// headers, check the port, read the stamp, count it per flow and record
// its latency, and free the buffer. Each op takes a buffer from the
// device's cache and copies a stamped 106-byte lab frame into it, as a
// driver's receive would; "copy" is that alone (allocate, copy, free),
// the floor to subtract.
func BenchmarkSinkHandle(b *testing.B) {
	_, rx := pair(b, memring.Config{})
	f := header.UDPFrame{
		SourceIP: netip.MustParseAddr("198.18.0.1"), DestinationIP: netip.MustParseAddr("198.18.0.2"),
		SourcePort: 12345, NoChecksum: true,
	}
	tmpl, err := newTemplate(&f, 64)
	if err != nil {
		b.Fatal(err)
	}
	frame := make([]byte, len(tmpl.frame))
	c := rx.Cache()
	for _, stamped := range []bool{true, false} {
		name := "stamped"
		if !stamped {
			name = "unstamped" // C's xsk_tx sends frames without a stamp
		}
		b.Run(name, func(b *testing.B) {
			s, err := NewSink(rx, SinkConfig{Link: true, Port: 9000})
			if err != nil {
				b.Fatal(err)
			}
			tmpl.fill(frame, 9000, Stamp{Run: 7, Seq: 0, Tstamp: s.clk.wall(s.clk.now())})
			if !stamped {
				clear(frame[tmpl.payOff:])
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for i := 0; i < b.N; i++ {
				if stamped {
					PutStamp(frame[tmpl.payOff:], Stamp{Run: 7, Seq: uint64(i), Tstamp: s.clk.wall(s.now)})
				}
				x, err := c.Alloc(len(frame))
				if err != nil {
					b.Fatal(err)
				}
				copy(x.Put(len(frame)), frame)
				s.handle(x)
			}
			if s.packets != uint64(b.N) {
				b.Fatalf("counted %d of %d frames", s.packets, b.N)
			}
		})
	}
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(frame)))
		for i := 0; i < b.N; i++ {
			x, err := c.Alloc(len(frame))
			if err != nil {
				b.Fatal(err)
			}
			copy(x.Put(len(frame)), frame)
			c.Free(x)
		}
	})
}
