//go:build linux

package afpacket

import (
	"testing"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/skb"
)

// TestConformance runs the netdev conformance suite over a lab, in both
// transmit modes, and with the virtio header on both ends (VnetHdr): TX in
// namespace A on A's veth end, RX in B on B's.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		mode TxMode
		vnet bool
	}{{TxMmsg, false}, {TxRing, false}, {TxMmsg, true}, {TxRing, true}} {
		name := tc.mode.String()
		if tc.vnet {
			name += "+vnet"
		}
		t.Run(name, func(t *testing.T) {
			netdevtest.Run(t, func(t *testing.T, cfg netdev.Config) *netdevtest.Pair {
				l := newLab(t)
				fr := newFramer(l)
				rx := openIn(t, &l.B, Config{Config: cfg, VnetHdr: tc.vnet})
				tx := openIn(t, &l.A, Config{Config: cfg, TxMode: tc.mode, VnetHdr: tc.vnet})
				hl := fr.uf.HeaderLen()
				return &netdevtest.Pair{
					TX: tx,
					RX: rx,
					Fill: func(b *skb.Buff, seq uint32, payload int) {
						f := b.Put(hl + payload)
						netdevtest.PutPayload(f[hl:], seq)
						if _, err := buildUDP(f, fr); err != nil {
							panic(err)
						}
					},
					Seq:        seqOf,
					MaxPayload: l.A.MTU - 28,
					Lossy:      true,
				}
			})
		})
	}
}
