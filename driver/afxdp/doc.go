// Package afxdp is the AF_XDP driver: one queue of a network interface as a
// netdev.Device, through an XDP socket whose UMEM is a pool arena, so that a
// frame goes from the wire to the application and back without a copy in
// user space (Documentation/networking/af_xdp.rst).
//
// # UMEM = pool arena
//
// Open makes a pool (or takes Config.Pool) with one Contiguous size class of
// FrameSize bytes (2048 or 4096), mapped as one arena of aligned blocks, and
// registers that arena as the UMEM: every UMEM frame is a pool block, and a
// buffer's skb HeadAddr is its frame address. A pool the driver makes also
// has a small class for copybreak copies (512 bytes with the default
// headroom), outside the UMEM.
//
//	UMEM = pool.Arena(umem class), chunk = FrameSize
//	+---------------------------+---------------------------+----
//	| frame 0                   | frame 1                   | ...
//	+---------------------------+---------------------------+----
//	 |<- 256 ->|<- Headroom-256 ->|<- frame data ->|<- tailroom ->|
//	 XDP_PACKET   UMEM headroom   (Poll's buffer: head = frame start,
//	 _HEADROOM    (xdp_umem_reg)   data at 256 + UMEM headroom)
//
// A received buffer keeps at least 256 bytes of headroom (XDP_PACKET_HEADROOM,
// which the kernel always leaves), more when Config.Headroom asks.
//
// # Frame life cycle
//
//	pool (Cache)  --refill-->  fill ring  --kernel-->  rx ring
//	  ^     ^                                            | Poll
//	  |     '--- application frees the skb <-- handler <-'
//	  |                                        | Xmit (no copy)
//	  '--- completion ring <--kernel-- tx ring <-'
//
// Open fills the fill ring completely before it binds. Poll hands each frame
// of the rx ring to the handler as the very buffer posted for it (no copy;
// under the copybreak threshold, a copy in the small class, the frame going
// straight back), 32 frames at a time, and after each 32 refills the fill
// ring from the Cache: a frame returns to the kernel once the application
// frees its buffer. The kernel holds at most a fill ring's worth of buffers,
// in the fill and rx rings together, as a C receiver that gives back each
// frame it took: frames still waiting in the rx ring are not replaced
// before they are taken, which keeps the buffers a receiver cycles through,
// and their cache lines, to one ring's worth. Xmit of a linear
// buffer in a UMEM frame of the device's pool puts the frame's address in the
// tx ring; any other buffer (another pool, the small class, nonlinear, or a
// frame already in flight through a clone) is copied into a UMEM frame and
// freed at once. The completion ring gives frames back and the driver frees
// their buffers: Xmit takes ownership and never clones (seed 000).
//
// # Doorbell
//
// Xmit publishes nothing until the doorbell: the tx producer is stored (with
// release ordering) and the kernel kicked (sendto) once per batch, when more
// is false or Batch frames are queued (xmit_more, seed 002), and once per
// frame when every Xmit passes more false. In copy mode the kernel sends at
// most 32 descriptors per call (XDP_MAX_TX_SKB_BUDGET, settable with
// Config.TxBudget on Linux 6.17 and later) and returns EAGAIN, and returns
// EBUSY when the device dropped a frame whose descriptor still completes (its
// queue to the peer was full): the doorbell kicks again until the ring is
// empty, after a pause of a couple of microseconds when the peer is
// congested, counting a dropped frame as tx_dropped_kernel. XDP_USE_NEED_WAKEUP is always asked for and honoured: a
// ring whose kernel side does not need a wakeup is not kicked (copy mode
// always needs one on tx).
//
// # Modes
//
// The XDP program is five instructions built with cilium/ebpf's asm package
// (no compiler at build or run time): bpf_redirect_map(xskmap,
// ctx->rx_queue_index, XDP_PASS), so frames of other queues, or of a queue
// without a socket, go on to the kernel's stack. It is attached with a BPF
// link in native (driver) mode, generic (SKB) mode as the fallback; the
// socket is bound zero-copy first, copy mode as the fallback. Mode reports
// what the kernel granted and why it refused the rest. On veth the program
// runs natively and the socket binds in copy mode (veth refuses zero-copy
// with EOPNOTSUPP). A transmit-only device (Config.TxOnly) attaches nothing.
// The devices a process opens on several queues of one interface share one
// program and XSKMAP (the kernel takes one XDP program per interface); the
// last one closed detaches it. A program attached by another process makes
// Open fail (EBUSY).
//
// # Waiting
//
// Wait follows Config.Wait: WaitSleep (the default) looks at the rx ring and
// sleeps 50 us when it is empty, so neither the receiver's core spins nor the
// sender's core pays a wakeup per frame (the C reference's `usleep` mode);
// the sleep is a raw nanosleep that keeps the goroutine's P, because going
// through the scheduler for thousands of short sleeps a second cost the
// receiving core more than the frames did. WaitSpin spins; WaitPoll blocks in
// poll(2). Close wakes a waiting Wait under every policy.
//
// # Errors and closing
//
// Errors from the kernel come back wrapped with the operation, the interface
// and the queue ("afxdp: bind zerocopy veth0 queue 0: operation not
// supported"), keeping the errno for errors.Is. The hot path allocates no
// error and formats no string. Open releases everything it made when a step
// fails; Close detaches the program, closes the socket, unmaps the rings and
// frees the driver's buffers. A bind right after a close of the same queue
// can fail with EBUSY for 10 to 20 ms while the kernel lets go of the old
// socket: Open retries for up to a second.
//
// # What it is not
//
// One Device is one queue with its own UMEM: sockets sharing a UMEM
// (XDP_SHARED_UMEM) are not done, though devices given the same Config.Pool
// register the same arena and so forward each other's frames without a
// copy (with Copybreak off: a frame under the copybreak threshold is
// copied out of the UMEM at Poll and back into it at Xmit). Multi-buffer frames (XDP_USE_SG, jumbo frames) are not supported, nor is
// transmit metadata (checksum offload, launch time). Frames the kernel sends
// through a veth with transmit checksumming on arrive with only the
// pseudo-header sum in their UDP or TCP checksum field (CHECKSUM_PARTIAL is
// never finished on a virtual link); AF_XDP passes no checksum state, so
// every received buffer reads CHECKSUM_NONE, and a forwarder that rewrites
// addresses and updates the checksum incrementally (header's
// ChecksumUpdateAddr) sends such a frame on with a wrong one: it must
// compute the transport checksum whole, or the sender's veth must have
// transmit checksumming off (ethtool -K IFNAME tx off). Linux only:
// elsewhere Open returns an error wrapping errors.ErrUnsupported.
package afxdp
