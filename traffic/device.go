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
