package header

import (
	"fmt"
	"testing"
)

var benchSizes = []int{64, 512, 1500, 9000}

var benchSink uint16

// reportPPS adds packets per second to a benchmark's output.
func reportPPS(b *testing.B) {
	if e := b.Elapsed(); e > 0 {
		b.ReportMetric(float64(b.N)/e.Seconds(), "pps")
	}
}

// BenchmarkChecksum compares Checksum (8 bytes at a time into 64 bits with
// carries) against the simple 16-bit loop of RFC 1071 on the same data.
func BenchmarkChecksum(b *testing.B) {
	for _, n := range benchSizes {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*7 + 3)
		}
		b.Run(fmt.Sprintf("fast/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				benchSink = Checksum(data, 0)
			}
		})
		b.Run(fmt.Sprintf("simple/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				benchSink = checksumRef(data, 0)
			}
		})
	}
}

// BenchmarkParseFrame parses a UDP/IPv4 frame, and a TCP/IPv6 frame with
// options, down to the payload, with and without verifying checksums.
func BenchmarkParseFrame(b *testing.B) {
	frames := []struct {
		name string
		b    []byte
	}{
		{"udp4", udpFrame(b, udp4Frame(), 64-42)},
		{"tcp6", tcpFrame(true, 64)},
	}
	for _, fr := range frames {
		b.Run(fr.name, func(b *testing.B) {
			b.SetBytes(int64(len(fr.b)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := ParseFrame(fr.b)
				if err != nil {
					b.Fatal(err)
				}
				benchSink += uint16(f.PayloadOffset)
			}
			reportPPS(b)
		})
		b.Run(fr.name+"/into", func(b *testing.B) {
			b.SetBytes(int64(len(fr.b)))
			b.ReportAllocs()
			var f Frame
			for b.Loop() {
				if err := ParseFrameInto(fr.b, &f); err != nil {
					b.Fatal(err)
				}
				benchSink += uint16(f.PayloadOffset)
			}
			reportPPS(b)
		})
	}
	for _, n := range benchSizes {
		frame := udpFrame(b, udp4Frame(), n-42)
		b.Run(fmt.Sprintf("udp4+verify/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				f, err := ParseFrame(frame)
				if err != nil {
					b.Fatal(err)
				}
				if err := f.VerifyChecksum(frame); err != nil {
					b.Fatal(err)
				}
			}
			reportPPS(b)
		})
	}
}

// BenchmarkBuildUDP4 writes the Ethernet, IPv4 and UDP headers of a frame
// of each size, including both checksums (the UDP one over the payload).
// "partial" leaves the UDP checksum CHECKSUM_PARTIAL, as with offload.
func BenchmarkBuildUDP4(b *testing.B) {
	f := udp4Frame()
	for _, n := range benchSizes {
		frame := make([]byte, n)
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				f.ID++
				if _, err := BuildUDP(frame, f); err != nil {
					b.Fatal(err)
				}
			}
			reportPPS(b)
		})
	}
	pf := udp4Frame()
	pf.PartialChecksum = true
	frame := make([]byte, 1500)
	b.Run("partial/1500", func(b *testing.B) {
		b.SetBytes(1500)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := BuildUDP(frame, pf); err != nil {
				b.Fatal(err)
			}
		}
		reportPPS(b)
	})
}
