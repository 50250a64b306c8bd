package afxdp

import "errors"

var (
	// ErrConfig is wrapped by Open for a Config it cannot use: a frame size
	// other than 2048 or 4096, a ring size that is not a power of two, too few
	// frames to fill the fill ring, a mode out of range.
	ErrConfig = errors.New("afxdp: bad config")

	// ErrNoUMEM is wrapped by Open when Config.Pool has no Contiguous size
	// class of the frame size to register as the UMEM (or its arena is not
	// mapped).
	ErrNoUMEM = errors.New("afxdp: pool has no contiguous class to use as UMEM")

	// ErrShortFrame is returned by Xmit for a frame shorter than an Ethernet
	// header (14 bytes): the packet was dropped (tx_dropped_malformed).
	ErrShortFrame = errors.New("afxdp: frame shorter than an Ethernet header")
)
