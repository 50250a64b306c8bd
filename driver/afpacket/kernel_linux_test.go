//go:build linux

package afpacket

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/skb"
)

// TestKernelReceives sends frames with the device in A to a plain UDP socket
// bound in B: the kernel's IP and UDP receive path accepts what we build.
func TestKernelReceives(t *testing.T) {
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			conn := listenIn(t, &l.B, testPort)
			tx := openIn(t, &l.A, Config{TxMode: mode})
			const n = 40
			sendN(t, tx, fr, 0, n, 100, 8)
			buf := make([]byte, 2048)
			seen := map[uint32]bool{}
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			for len(seen) < n {
				k, from, err := conn.ReadFromUDPAddrPort(buf)
				if err != nil {
					t.Fatalf("after %d datagrams: %v", len(seen), err)
				}
				if k != 100 || from.Addr() != l.A.Addr || from.Port() != 12345 {
					t.Fatalf("datagram of %d bytes from %v", k, from)
				}
				seen[binary.BigEndian.Uint32(buf)] = true
			}
		})
	}
}

// TestCaptureKernel captures with the device in B the datagrams a kernel UDP
// socket in A sends: the frames parse, carry the payload, and a checksum the
// sender left to the (virtual) hardware is marked CHECKSUM_PARTIAL and
// completes to a valid one.
func TestCaptureKernel(t *testing.T) {
	l := newLab(t)
	rx := openIn(t, &l.B, Config{})
	// Unconnected: B answers with port unreachable, which would fail the
	// next write of a connected socket.
	conn := listenIn(t, &l.A, 0)
	const n = 20
	msg := make([]byte, 300)
	for i := range n {
		binary.BigEndian.PutUint32(msg, uint32(i))
		if _, err := conn.WriteToUDPAddrPort(msg, netip.AddrPortFrom(l.B.Addr, testPort)); err != nil {
			t.Fatal(err)
		}
	}
	partial := 0
	got := collect(t, rx, n, 3*time.Second, func(b *skb.Buff, seq uint32, payload int) {
		if payload != len(msg) {
			t.Errorf("seq %d: payload %d bytes", seq, payload)
		}
		f, err := header.ParseFrame(b.Data())
		if err != nil {
			t.Fatal(err)
		}
		if b.TransportOffset() != f.TransportOffset {
			t.Errorf("transport offset %d, want %d", b.TransportOffset(), f.TransportOffset)
		}
		if b.IPSummed() == skb.ChecksumPartial {
			partial++
			if err := header.FinishChecksum(b.Data(), b.CsumStart(), b.CsumOffset()); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.VerifyChecksum(b.Data()); err != nil {
			t.Errorf("seq %d (%v): %v", seq, b.IPSummed(), err)
		}
	})
	if got != n {
		t.Fatalf("captured %d of %d", got, n)
	}
	t.Logf("%d of %d frames CHECKSUM_PARTIAL", partial, n)
}
