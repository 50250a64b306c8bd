// Package netdevtest is the conformance suite every skb driver passes: the
// rules of package netdev (ordering, ownership, the doorbell on every exit
// path, ring-full back-pressure, counters that add up) checked against a pair
// of connected devices that the driver's test supplies.
package netdevtest

import (
	"testing"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// Pair is two connected devices of one driver: what TX transmits, RX
// receives. The suite owns both and closes them.
type Pair struct {
	TX, RX netdev.Device

	// Fill writes into b (an empty buffer from TX.Cache(), with headroom
	// reserved) a packet as the driver transmits it: for a socket driver the
	// datagram, for a link-layer driver a whole Ethernet frame addressed to
	// RX. The packet carries seq (big-endian, in its first four payload
	// bytes) and has payload bytes of payload, at least 4.
	Fill func(b *skb.Buff, seq uint32, payload int)

	// Seq returns the sequence number a received packet carries and its
	// payload length, or ok false for a packet that is not the suite's (a
	// link-layer device also sees other traffic, such as IPv6 neighbour
	// discovery). It must not panic on any input.
	Seq func(b *skb.Buff) (seq uint32, payload int, ok bool)

	// MaxPayload is the largest payload Fill can carry in one packet.
	MaxPayload int

	// Lossy says the path between TX and RX may drop packets under load (a
	// kernel path: socket buffers, veth queues). The suite then paces its
	// sends and allows loss where it measures throughput, but never
	// reordering, duplication or corruption.
	Lossy bool
}

// Factory makes a fresh connected pair with the given settings, or skips the
// test (t.Skip) with the reason when the driver cannot run here, for example
// without root; under CI=true a driver's factory fails instead of skipping.
// The suite calls it once per subtest.
type Factory func(t *testing.T, cfg netdev.Config) *Pair
