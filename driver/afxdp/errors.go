package afxdp

import (
	"errors"
	"fmt"

	"github.com/skbdev/skb/netdev"
)

var (
	// ErrConfig is wrapped by Open for a Config it cannot use: a frame size
	// other than 2048 or 4096, a ring size that is not a power of two, too few
	// frames to fill the fill ring, a mode out of range, no interface
	// name. It also matches netdev.ErrConfig (errors.Is), as every
	// driver's configuration error does.
	ErrConfig = netdev.NewConfigError("afxdp: invalid config")

	// ErrShortFrame is returned by Xmit for a frame shorter than an Ethernet
	// header (14 bytes): the packet was dropped (tx_dropped_malformed).
	ErrShortFrame = errors.New("afxdp: frame shorter than an Ethernet header")
)

// The errors of a closed device, made once so that returning one allocates
// nothing; each matches netdev.ErrClosed.
var (
	errAllocClosed = fmt.Errorf("afxdp: alloc: %w", netdev.ErrClosed)
	errXmitClosed  = fmt.Errorf("afxdp: xmit: %w", netdev.ErrClosed)
	errFlushClosed = fmt.Errorf("afxdp: flush: %w", netdev.ErrClosed)
	errPollClosed  = fmt.Errorf("afxdp: poll: %w", netdev.ErrClosed)
	errWaitClosed  = fmt.Errorf("afxdp: wait: %w", netdev.ErrClosed)
	errCloseAgain  = fmt.Errorf("afxdp: close: %w", netdev.ErrClosed)
)
