// Package netdevtest is the conformance suite every skb driver passes: the
// rules of package netdev (ordering, ownership, the doorbell on every exit
// path, ring-full back-pressure, counters that add up) checked against a pair
// of connected devices that the driver's test supplies.
//
// A driver's test calls Run with a Factory:
//
//	func TestConformance(t *testing.T) {
//		netdevtest.Run(t, func(t *testing.T, cfg netdev.Config) *netdevtest.Pair {
//			a, b, err := mydriver.Open(cfg, ...) // every buffer from cfg.Pool
//			if err != nil {
//				t.Fatal(err)
//			}
//			return &netdevtest.Pair{TX: a, RX: b, Fill: fill, Seq: seq, MaxPayload: 1472}
//		})
//	}
//
// See Run for the rules checked and the numbers each failure reports.
package netdevtest

import (
	"testing"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// Pair is two connected devices of one driver: what TX transmits, RX
// receives. The suite owns both and closes them; the factory must not close
// them itself (its own t.Cleanup functions run after the suite's, so they may
// remove what the devices ran on).
type Pair struct {
	TX, RX netdev.Device

	// Fill writes into b (an empty buffer from TX.Cache(), with headroom
	// reserved and at least payload+FillSlack bytes of tailroom) a packet as
	// the driver transmits it: for a socket driver the datagram, for a
	// link-layer driver a whole Ethernet frame addressed to RX. The packet
	// carries seq (big-endian, in its first four payload bytes) and has
	// payload bytes of payload, at least 4. The payload must end the packet
	// (no trailer or padding after it), so that the suite finds it at
	// Len()-payload; what the bytes after seq hold is Fill's choice
	// (PutPayload writes a pattern that makes corruption easy to see). The
	// suite checks on receipt that the payload arrived byte for byte.
	Fill func(b *skb.Buff, seq uint32, payload int)

	// Seq returns the sequence number a received packet carries and its
	// payload length, or ok false for a packet that is not the suite's (a
	// link-layer device also sees other traffic, such as IPv6 neighbour
	// discovery). It must not panic on any input and must not change b.
	Seq func(b *skb.Buff) (seq uint32, payload int, ok bool)

	// MaxPayload is the largest payload Fill can carry in one packet. A
	// packet built from the pool's largest buffer is always longer than the
	// device can carry: the suite uses one to exercise Xmit's error path.
	MaxPayload int

	// Lossy says the path between TX and RX may drop packets under load (a
	// kernel path: socket buffers, veth queues). The suite then paces its
	// sends and allows the loss of a small fraction (LossyFraction), but never
	// reordering, duplication or corruption. A pair that is not Lossy must
	// deliver every packet the suite sends; the suite never has more than
	// 3×Batch+3 packets sent and not yet polled.
	Lossy bool
}

// Factory makes a fresh connected pair with the given settings, or skips the
// test (t.Skip) with the reason when the driver cannot run here, for example
// without root; under CI=true a driver's factory fails instead of skipping.
// The suite calls it once per subtest.
//
// cfg.Pool is a pool the suite made for the subtest (in debug mode, except
// for the zero-allocation subtest), and the factory must pass cfg to the
// devices so that every buffer they allocate, receive buffers included,
// comes from it: after each subtest the suite closes both devices and fails
// the subtest when the pool still has buffers in flight, naming where each
// was allocated. The factory must honour the other fields too (Headroom,
// Copybreak, Batch), which some subtests set.
type Factory func(t *testing.T, cfg netdev.Config) *Pair
