//go:build linux

package afpacket

import (
	"testing"
	"time"

	"github.com/skbdev/skb/skb"
)

// TestZeroAllocs: in steady state, sending a batch (both modes, and with
// the virtio header) and receiving it allocates nothing on the Go heap.
func TestZeroAllocs(t *testing.T) {
	for _, tc := range []struct {
		mode TxMode
		vnet bool
	}{{TxMmsg, false}, {TxRing, false}, {TxMmsg, true}} {
		name := tc.mode.String()
		if tc.vnet {
			name += "+vnet"
		}
		t.Run(name, func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			rx := openIn(t, &l.B, Config{VnetHdr: tc.vnet})
			tx := openIn(t, &l.A, Config{TxMode: tc.mode, VnetHdr: tc.vnet})
			const burst = 64
			txc, rc := tx.Cache(), rx.Cache()
			hl := fr.uf.HeaderLen()
			tmpl := make([]byte, hl+64)
			b, _ := txc.Alloc(len(tmpl))
			fr.fill(b, 0, 64)
			copy(tmpl, b.Data())
			txc.Free(b)
			got := 0
			h := func(b *skb.Buff) { got++; rc.Free(b) }
			round := func() {
				for i := range burst {
					b, err := txc.Alloc(len(tmpl))
					if err != nil {
						panic(err)
					}
					copy(b.Put(len(tmpl)), tmpl)
					if err := tx.Xmit(b, i != burst-1); err != nil {
						panic(err)
					}
				}
				want := got + burst
				deadline := time.Now().Add(2 * time.Second)
				for got < want && time.Now().Before(deadline) {
					rx.Poll(burst, h)
					if got < want {
						rx.Wait(5 * time.Millisecond)
					}
				}
			}
			sent := 0
			xmitOnly := testing.AllocsPerRun(50, func() {
				for i := range burst {
					b, _ := txc.Alloc(len(tmpl))
					copy(b.Put(len(tmpl)), tmpl)
					tx.Xmit(b, i != burst-1)
				}
				sent += burst
			})
			// Drain what Xmit alone sent before measuring the loop.
			collect(t, rx, sent, 3*time.Second, nil)
			both := testing.AllocsPerRun(50, round)
			// Stats reads the kernel's PACKET_STATISTICS, as a Poll of a
			// ring that lost frames does.
			stats := testing.AllocsPerRun(50, func() { _ = rx.Stats() })
			if xmitOnly != 0 || both != 0 || stats != 0 {
				t.Fatalf("allocations per batch of %d: Xmit %v, Xmit and Poll %v; per Stats %v", burst, xmitOnly, both, stats)
			}
		})
	}
}
