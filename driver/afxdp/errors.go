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

// closedErrs are the errors of a closed device, made once at Open so
// that returning one allocates nothing; each names the interface and
// queue, as the device's other errors do, and matches netdev.ErrClosed.
type closedErrs struct {
	alloc, xmit, flush, poll, wait, again error
}

func newClosedErrs(ifname string, queue int) closedErrs {
	e := func(op string) error {
		return fmt.Errorf("afxdp: %s %s queue %d: %w", op, ifname, queue, netdev.ErrClosed)
	}
	return closedErrs{alloc: e("alloc"), xmit: e("xmit"), flush: e("flush"), poll: e("poll"), wait: e("wait"), again: e("close")}
}
