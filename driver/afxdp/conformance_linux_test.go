package afxdp

import (
	"encoding/binary"
	"testing"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// TestConformance runs the netdev conformance suite over a lab: a
// transmit-only device in A, a receiving device in B with native XDP. The
// suite's default pool has no contiguous class, so both run with a private
// UMEM and copy; TestConformanceUMEM runs the suite again in a pool whose
// frame class is the UMEM, so that frames go without a copy.
func TestConformance(t *testing.T) { conformance(t, nil) }

// TestConformanceUMEM runs the suite with the pool's 2 KiB class as the UMEM
// shared by both devices: transmit and receive without copies (copybreak
// copies land in the 512-byte class).
func TestConformanceUMEM(t *testing.T) {
	conformance(t, &pool.Config{
		Classes:  []pool.Class{{Size: 512}, {Size: 2048, Max: 4096, Contiguous: true}},
		Headroom: 256,
	})
}

func conformance(t *testing.T, pc *pool.Config) {
	l := labtest.New(t, lab.Options{})
	f := frameTo(&l.A, &l.B)
	hl := f.HeaderLen()
	fillFrame := func(b *skb.Buff, seq uint32, payload int) {
		p := b.Put(hl + payload)
		netdevtest.PutPayload(p[hl:], seq)
		if _, err := header.BuildUDP(p, &f); err != nil {
			panic(err)
		}
	}
	seqFrame := func(b *skb.Buff) (uint32, int, bool) {
		data := b.Data()
		fr, err := header.ParseFrame(data)
		if err != nil || fr.Protocol != header.IPProtoUDP || fr.PayloadOffset == 0 ||
			header.UDP(data[fr.TransportOffset:]).DestinationPort() != testPort || fr.End-fr.PayloadOffset < 4 {
			return 0, 0, false
		}
		return binary.BigEndian.Uint32(data[fr.PayloadOffset:]), fr.End - fr.PayloadOffset, true
	}
	factory := func(t *testing.T, cfg netdev.Config) *netdevtest.Pair {
		var tx, rx *Device
		if err := l.A.Do(func() (err error) { tx, err = Open(l.A.Ifname, 0, Config{Config: cfg, TxOnly: true}); return err }); err != nil {
			t.Fatal(err)
		}
		if err := l.B.Do(func() (err error) { rx, err = Open(l.B.Ifname, 0, Config{Config: cfg}); return err }); err != nil {
			tx.Close()
			t.Fatal(err)
		}
		return &netdevtest.Pair{TX: tx, RX: rx, Fill: fillFrame, Seq: seqFrame, MaxPayload: l.A.MTU - 28}
	}
	if pc == nil {
		netdevtest.Run(t, factory)
		return
	}
	netdevtest.RunPool(t, *pc, factory)
}
