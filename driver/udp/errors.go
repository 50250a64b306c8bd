package udp

import (
	"errors"

	"github.com/skbdev/skb/netdev"
)

var (
	// ErrConfig is returned by Open for an invalid Config: one that
	// netdev.Config.Validate refuses, Local and Remote of different
	// families, a negative size or duration, a socket buffer over
	// MaxSockBuf, or a RecvSize or Headroom that no size class of the pool
	// holds. It also matches netdev.ErrConfig (errors.Is), as every
	// driver's configuration error does.
	ErrConfig = netdev.NewConfigError("udp: invalid config")

	// ErrNoDestination is returned by Xmit on an unconnected device (Remote
	// unset) when no destination was set with SetDst, and by XmitTo,
	// XmitFrom and SetDst for an address the socket cannot send to (an IPv6
	// address on an IPv4 socket or on one connected to an IPv4-mapped peer,
	// an IPv4 address on a socket bound or connected to an IPv6 one that is
	// not IPv4-mapped, port 0, the unspecified address, or the zero
	// AddrPort). SetDst drops nothing; the transmit calls drop the packet
	// and count it in tx_dropped_error.
	ErrNoDestination = errors.New("udp: no destination for the datagram")

	// ErrSource is returned by XmitFrom for a source address of another
	// family than the destination, or a multicast or limited-broadcast
	// (255.255.255.255) one: the datagram was dropped and counted in
	// tx_dropped_error.
	ErrSource = errors.New("udp: source address not of the destination's family, or multicast")

	// ErrClosed is returned by every method after Close. It is
	// netdev.ErrClosed, which is net.ErrClosed.
	ErrClosed = netdev.ErrClosed
)
