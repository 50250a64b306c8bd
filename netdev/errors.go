package netdev

import (
	"errors"
	"net"
	"os"
)

var (
	// ErrQueueFull is returned by Xmit when the transmit ring is still full
	// after the doorbell was rung: the packet was dropped (and counted in
	// tx_ring_full and tx_dropped). Callers that must not drop check
	// TxAvail first, or Flush and retry later with a new buffer.
	ErrQueueFull = errors.New("netdev: transmit queue full")

	// ErrConfig is wrapped by Config.Validate's error, and so by every
	// driver's Open, for settings out of range.
	ErrConfig = errors.New("netdev: invalid config")

	// ErrTooBig is returned by Xmit for a packet the device cannot carry
	// (larger than its MTU or buffers); the packet was dropped.
	ErrTooBig = errors.New("netdev: packet too big for the device")

	// ErrClosed is returned by every method after Close. It is net.ErrClosed,
	// so errors.Is(err, net.ErrClosed) holds.
	ErrClosed = net.ErrClosed

	// ErrTimeout is returned by Wait when the timeout passed with nothing to
	// receive. It is os.ErrDeadlineExceeded.
	ErrTimeout = os.ErrDeadlineExceeded
)
