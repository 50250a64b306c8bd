package afpacket

import "errors"

var (
	// ErrConfig is wrapped by Open's error for a Config that cannot work
	// (no interface name, a ring geometry the kernel would refuse, fanout
	// flags without a mode).
	ErrConfig = errors.New("afpacket: invalid config")

	// ErrShortFrame is wrapped by Xmit's error for a buffer shorter than an
	// Ethernet header (14 bytes): the kernel refuses such a frame
	// (dev_validate_header). The buffer was dropped (tx_dropped_malformed).
	ErrShortFrame = errors.New("afpacket: frame shorter than an Ethernet header")
)
