//go:build linux

package afpacket

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/skb"
)

// TestIntegrityUnderLoad sends frames as fast as the device takes them, each
// with a payload pattern of its own, and checks every frame received byte for
// byte: the transmit ring must not reuse a slot whose frame the kernel still
// reads.
func TestIntegrityUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("sends at full speed for a while")
	}
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			rx := openIn(t, &l.B, Config{BlockSize: 1 << 20})
			tx := openIn(t, &l.A, Config{TxMode: mode, TxOnly: true})
			const n = 100000
			const payload = 200
			var bad, got atomic.Int64
			var first atomic.Value
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				want := make([]byte, payload)
				for {
					select {
					case <-stop:
						return
					default:
					}
					rx.Poll(256, func(b *skb.Buff) {
						if seq, pl, ok := seqOf(b); ok {
							got.Add(1)
							netdevtest.PutPayload(want[:pl], seq)
							if !bytes.Equal(b.Data()[b.Len()-pl:], want[:pl]) {
								if bad.Add(1) == 1 {
									first.Store(fmt.Sprintf("seq %d", seq))
								}
							}
						}
						rx.Cache().Free(b)
					})
					rx.Wait(10 * time.Millisecond)
				}
			}()
			c := tx.Cache()
			hl := fr.uf.HeaderLen()
			for i := range n {
				b, _ := c.Alloc(hl + payload)
				f := b.Put(hl + payload)
				netdevtest.PutPayload(f[hl:], uint32(i))
				buildUDP(f, fr)
				tx.Xmit(b, (i+1)%64 != 0)
			}
			tx.Flush()
			deadline := time.Now().Add(3 * time.Second)
			for got.Load() < n && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			close(stop)
			<-done
			t.Logf("received %d of %d, %d corrupt; tx %+v; rx dropped %d", got.Load(), n, bad.Load(), tx.Stats().TxDroppedTotal(), rx.Stats().RxDroppedTotal())
			if bad.Load() != 0 {
				t.Fatalf("%d of %d frames corrupt, first %v", bad.Load(), got.Load(), first.Load())
			}
		})
	}
}
