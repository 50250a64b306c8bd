//go:build linux

package udp

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/skb"
)

// fillDatagram writes the suite's packet: for a socket device, the payload
// alone.
func fillDatagram(b *skb.Buff, seq uint32, payload int) {
	netdevtest.PutPayload(b.Put(payload), seq)
}

// seqDatagram reads it back: every datagram of 4 bytes or more is the
// suite's.
func seqDatagram(b *skb.Buff) (uint32, int, bool) {
	var h [4]byte
	if b.CopyBits(0, h[:]) != nil {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(h[:]), b.Len(), true
}

// TestConformance runs the netdev conformance suite on loopback, IPv4 and
// IPv6, with GSO and GRO on and off, and with the receiver asking for each
// datagram's local address (PktInfo) beside GRO and without it, and with
// a receiver that keeps its P while it waits (KeepP). The
// receive buffer is large enough for everything the suite has in flight,
// so the pair is not lossy.
func TestConformance(t *testing.T) {
	for _, fam := range families {
		for _, off := range []struct{ gso, gro, pktinfo, keepP bool }{
			{false, false, false, false}, {true, false, false, false}, {false, true, false, false}, {true, true, false, false},
			{false, false, true, false}, {true, true, true, false}, {false, false, false, true},
		} {
			name := fmt.Sprintf("%s/gso=%v/gro=%v", fam.name, off.gso, off.gro)
			if off.pktinfo {
				name += "/pktinfo"
			}
			if off.keepP {
				name += "/keepp"
			}
			t.Run(name, func(t *testing.T) {
				netdevtest.Run(t, func(t *testing.T, cfg netdev.Config) *netdevtest.Pair {
					rx, err := Open(Config{Config: cfg, Local: fam.addr, GRO: off.gro, PktInfo: off.pktinfo, KeepP: off.keepP, RcvBuf: 8 << 20})
					if err != nil {
						t.Fatal(err)
					}
					tx, err := Open(Config{Config: cfg, Remote: rx.LocalAddr(), GSO: off.gso})
					if err != nil {
						rx.Close()
						t.Fatal(err)
					}
					// RX answers TX (the suite's "xmit in poll"), so that
					// its doorbell runs from inside Poll.
					if err := rx.SetDst(tx.LocalAddr()); err != nil {
						t.Fatal(err)
					}
					return &netdevtest.Pair{TX: tx, RX: rx, Fill: fillDatagram, Seq: seqDatagram, MaxPayload: 1472}
				})
			})
		}
	}
}
