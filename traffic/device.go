package traffic

import (
	"net/netip"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// AddrXmitter is a datagram device that addresses each datagram itself and
// reports where each received one came from, as *udp.Device does. Pktgen
// sends each flow to its own port with XmitTo; Echo answers each request
// with XmitTo to its Src.
type AddrXmitter interface {
	netdev.Device
	// XmitTo is Xmit to dst. It takes ownership of b, also when it
	// returns an error.
	XmitTo(b *skb.Buff, dst netip.AddrPort, more bool) error
	// Src returns the source of the datagram last handed to Poll's
	// handler.
	Src() netip.AddrPort
}

// SrcXmitter is an AddrXmitter that can also report the address of this
// host each datagram came to and answer from it, as *udp.Device does with
// Config.PktInfo: Echo on a device bound to the unspecified address answers
// each request from the address it was sent to (the client's destination),
// not from the one its route picks.
type SrcXmitter interface {
	AddrXmitter
	// PktInfo reports whether DstAddr gives each datagram's local address.
	PktInfo() bool
	// DstAddr returns the local address of the datagram last handed to
	// Poll's handler, or the zero Addr when PktInfo is off.
	DstAddr() netip.Addr
	// XmitFrom is XmitTo from the source address src (the zero Addr:
	// the route's choice). It takes ownership of b, also when it returns
	// an error.
	XmitFrom(b *skb.Buff, src netip.Addr, dst netip.AddrPort, more bool) error
}

// Allocator is a device that hands out transmit buffers of its own, such
// as *afxdp.Device, whose Alloc returns UMEM frames that Xmit sends without
// a copy. The engines allocate from it when the device has it, and from the
// device's Cache otherwise. The caller owns the returned buffer.
type Allocator interface {
	Alloc(size int) (*skb.Buff, error)
}

// Segmenter is a datagram device that can send UDP GSO super-packets
// (skb.GSOUDPL4), as *udp.Device does; GSO reports whether segmentation
// is on.
type Segmenter interface {
	GSO() bool
}

// GSOFramer is a link-layer device that can hand over GSO super-frames
// with their GSO fields set, as *afpacket.Device does with
// Config.VnetHdr; GSOFrames reports whether it does. A link-layer Sink
// counts such a frame as the packets it holds; on other link-layer
// devices it does not read a frame's GSO fields (a cache line per frame).
type GSOFramer interface {
	GSOFrames() bool
}

// ChecksumStater is a link-layer device that can set each received
// frame's checksum state from what the kernel knows, as *afpacket.Device
// does: CHECKSUM_PARTIAL for a frame from this host whose checksum is not
// computed yet, CHECKSUM_UNNECESSARY for one verified. ChecksumStates
// reports whether it does; false is as a device without the method. A
// link-layer Sink verifies the UDP checksum of a frame such a device left
// CHECKSUM_NONE, and trusts the other states (COMPLETE among them).
// Elsewhere (AF_XDP, where a frame from a sender on this host carries a
// checksum still to be computed, and nothing says so) the Sink verifies
// the IPv4 header's checksum only.
type ChecksumStater interface {
	ChecksumStates() bool
}
