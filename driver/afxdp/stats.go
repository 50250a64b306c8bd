package afxdp

// XDPStats are the socket's counters as the kernel keeps them (struct
// xdp_statistics, getsockopt XDP_STATISTICS), and the driver's own counts of
// what is particular to AF_XDP: doorbell system calls and transmit copies.
type XDPStats struct {
	// RxDropped counts frames the XDP program redirected to the socket that
	// the kernel dropped for want of a fill ring entry (or as too long for
	// a UMEM frame); those dropped for want of an rx ring slot are in
	// RxRingFull alone (the kernel adds them to rx_dropped only for a
	// caller that reads the short struct). Stats reports both as
	// rx_dropped_kernel.
	RxDropped uint64
	// RxInvalidDescs and TxInvalidDescs count descriptors the kernel found
	// invalid (an address outside the UMEM, a length past the frame).
	RxInvalidDescs uint64
	TxInvalidDescs uint64
	// RxRingFull counts frames dropped because the rx ring was full: the
	// application did not Poll fast enough.
	RxRingFull uint64
	// RxFillRingEmpty counts times the kernel found the fill ring empty.
	RxFillRingEmpty uint64
	// TxRingEmpty counts doorbells that found the tx ring empty.
	TxRingEmpty uint64
	// Kicks counts doorbell system calls (sendto): in copy mode the kernel
	// sends at most 32 frames (XDP_MAX_TX_SKB_BUDGET) per call and the driver
	// kicks again, so one doorbell (tx_doorbells) may take several kicks.
	Kicks uint64
	// KickBusy counts kicks that returned EBUSY: the device dropped a frame
	// (counted in tx_dropped_kernel) whose descriptor still completed.
	KickBusy uint64
	// TxCopied counts frames Xmit copied into a UMEM frame because they were
	// not a linear UMEM frame of the device's pool already.
	TxCopied uint64
}
