package afpacket

import (
	"errors"
	"fmt"

	"github.com/skbdev/skb/netdev"
)

var (
	// ErrConfig is wrapped by Open's error for a Config that cannot work
	// (no interface name, a ring geometry the kernel would refuse, fanout
	// flags without a mode). It also matches netdev.ErrConfig (errors.Is),
	// as every driver's configuration error does.
	ErrConfig = netdev.NewConfigError("afpacket: invalid config")

	// ErrShortFrame is wrapped by Xmit's error for a buffer shorter than an
	// Ethernet header (14 bytes): the kernel refuses such a frame
	// (dev_validate_header). The buffer was dropped (tx_dropped_malformed).
	ErrShortFrame = errors.New("afpacket: frame shorter than an Ethernet header")
)

// openError prefixes an error of Open with "afpacket: open IFNAME: ", or
// "afpacket: open: " when no interface was named.
func openError(ifname string, err error) error {
	if ifname == "" {
		return fmt.Errorf("afpacket: open: %w", err)
	}
	return fmt.Errorf("afpacket: open %s: %w", ifname, err)
}
