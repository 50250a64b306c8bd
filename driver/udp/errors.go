package udp

import (
	"errors"

	"github.com/skbdev/skb/netdev"
)

var (
	// ErrConfig is returned by Open for an invalid Config: one that
	// netdev.Config.Validate refuses (the error wraps netdev.ErrConfig too),
	// Local and Remote of different families, a negative size or duration,
	// or a RecvSize or Headroom that no size class of the pool holds.
	ErrConfig = errors.New("udp: invalid config")

	// ErrNoDestination is returned by Xmit on an unconnected device (Remote
	// unset) when no destination was set with SetDst, and by XmitTo and
	// SetDst for an address the socket cannot send to (an IPv6 address on an
	// IPv4 socket, or the zero AddrPort). Xmit and XmitTo dropped the packet
	// and counted it in tx_dropped_error.
	ErrNoDestination = errors.New("udp: no destination for the datagram")

	// ErrClosed is returned by every method after Close. It is
	// netdev.ErrClosed, which is net.ErrClosed.
	ErrClosed = netdev.ErrClosed
)
