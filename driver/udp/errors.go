package udp

import (
	"errors"

	"github.com/skbdev/skb/netdev"
)

var (
	// ErrConfig is returned by Open for an invalid Config: no address to
	// choose the socket's family from, Local and Remote of different
	// families, or a negative size.
	ErrConfig = errors.New("udp: invalid config")

	// ErrNoDestination is returned by Xmit on an unconnected device (Remote
	// unset) when no destination was set with SetDst, and by XmitTo and
	// SetDst for an address the socket cannot send to (an IPv6 address on an
	// IPv4 socket, or the zero AddrPort). The packet was dropped and counted
	// in tx_dropped_error.
	ErrNoDestination = errors.New("udp: no destination for the datagram")

	// ErrClosed is returned by every method after Close. It is
	// netdev.ErrClosed, which is net.ErrClosed.
	ErrClosed = netdev.ErrClosed
)
