package memring

import (
	"fmt"

	"github.com/skbdev/skb/netdev"
)

// ErrConfig is returned by NewPair for an invalid Config: a RingSize that is
// not a power of two, a negative size or cost, or a RxBufSize the pool cannot
// hold.
var ErrConfig = netdev.NewConfigError("memring: invalid config")

// The errors of the hot path are made once, so that returning one formats no
// string and allocates nothing.
var (
	errXmitTooBig = fmt.Errorf("memring: xmit: %w", netdev.ErrTooBig)
	errXmitClosed = fmt.Errorf("memring: xmit: %w", netdev.ErrClosed)
	errFlushClose = fmt.Errorf("memring: flush: %w", netdev.ErrClosed)
	errPollClosed = fmt.Errorf("memring: poll: %w", netdev.ErrClosed)
	errWaitClosed = fmt.Errorf("memring: wait: %w", netdev.ErrClosed)
	errWaitTime   = fmt.Errorf("memring: wait: %w", netdev.ErrTimeout)
	errCloseAgain = fmt.Errorf("memring: close: %w", netdev.ErrClosed)
)
