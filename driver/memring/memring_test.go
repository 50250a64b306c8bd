package memring_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/pool/pooltest"
	"github.com/skbdev/skb/skb"
)

func TestMain(m *testing.M) { pooltest.Main(m) }

// fill writes a memring packet: the payload alone, seq first.
func fill(b *skb.Buff, seq uint32, payload int) {
	netdevtest.PutPayload(b.Put(payload), seq)
}

// seq reads a packet back: every packet of 4 bytes or more is the suite's.
func seq(b *skb.Buff) (uint32, int, bool) {
	var h [4]byte
	if b.CopyBits(0, h[:]) != nil {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(h[:]), b.Len(), true
}

// factory makes pairs with base's memring settings and the suite's
// netdev.Config.
func factory(base memring.Config) netdevtest.Factory {
	return func(t *testing.T, cfg netdev.Config) *netdevtest.Pair {
		c := base
		c.Config = cfg
		a, b, err := memring.NewPair(c)
		if err != nil {
			t.Fatal(err)
		}
		max := c.RxBufSize
		if max == 0 {
			max = memring.DefaultRxBufSize
		}
		return &netdevtest.Pair{TX: a, RX: b, Fill: fill, Seq: seq, MaxPayload: max}
	}
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  memring.Config
	}{
		{"default", memring.Config{}},
	} {
		t.Run(c.name, func(t *testing.T) { netdevtest.Run(t, factory(c.cfg)) })
	}
	// Jumbo frames, in pools with a class that fits them.
	jumbo := pool.Config{Classes: []pool.Class{{Size: pool.SmallSize}, {Size: pool.FrameSize}, {Size: 16 << 10}, {Size: pool.LargeSize}}}
	t.Run("jumbo,doorbell=1us", func(t *testing.T) {
		netdevtest.RunPool(t, jumbo, factory(memring.Config{RxBufSize: 9000, DoorbellCost: time.Microsecond}))
	})
}
