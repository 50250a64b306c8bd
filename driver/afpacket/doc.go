// Package afpacket is a netdev.Device over an AF_PACKET socket bound to one
// interface (packet(7)): it receives and transmits whole Ethernet frames,
// VLAN tags included, as a NIC queue would.
//
// # Receive
//
// Frames arrive in a TPACKET_V3 receive ring mapped into the process
// (Documentation/networking/packet_mmap.rst): the kernel fills a block with
// frames and hands it over when it is full or its retire timeout passes.
//
//	ring: block 0 | block 1 | ... | block N-1     (BlockSize x BlockCount)
//	block: desc | hdr frame | hdr frame | ...     (tp_next_offset chains)
//	                 |
//	Poll: copy ──────┘──> pool buffer: headroom | frame | tailroom
//	      block done ──> block_status = TP_STATUS_KERNEL (handed back)
//
// Poll copies every frame out into a buffer from the device's pool cache, a
// right-sized one under the copybreak threshold (seed 001) and a 2 KiB one
// otherwise, and hands each block back as soon as its last frame is copied,
// so the ring drains as fast as frames are copied. Header offsets, protocol,
// checksum state and timestamp are set from the frame and the kernel's
// header (see Device.Poll). Frames cut short by SnapLen or a block are
// dropped and counted (rx_truncated); frames the kernel could not queue
// because the ring was full are counted from PACKET_STATISTICS
// (rx_dropped_kernel). Frames whose headers do not parse are delivered (a
// link carries whatever it carries) and counted (RingStats.RxUnparsed), or
// dropped with Config.DropMalformed. A veth hands over whole the GSO
// packets of a sender with GSO or TSO on its other end, frames longer than
// the MTU: with Config.VnetHdr the kernel describes each in a virtio_net_hdr
// and Poll sets the buffer's GSO size, segment count and type from it.
//
// # Transmit
//
// Xmit takes a buffer holding a whole Ethernet frame. TxMmsg queues the
// buffers and sends the batch with one sendmmsg(2); TxRing copies each frame
// into a PACKET_TX_RING slot and kicks the ring with one send(2). Both ring
// the doorbell once per batch (seed 002), bypass the qdisc
// (PACKET_QDISC_BYPASS) unless Config.UseQdisc, and never clone (seed 000).
//
// # Queues
//
// A Device is one queue and belongs to one goroutine. For several, open one
// Device per goroutine in one PACKET_FANOUT group (OpenFanout): the kernel
// spreads received frames over them by flow hash, round robin, CPU or
// receive queue. Each may transmit on its own.
//
// # Namespaces and privileges
//
// Open binds in the network namespace of the calling thread; run it inside
// lab.Host.Do or under `ip netns exec`. It needs CAP_NET_RAW; without it the
// error matches os.ErrPermission.
//
// # Speed
//
// Measured on a 2-vCPU VM shared with other work, veth between two
// namespaces, 106-byte frames (64-byte UDP payloads), 64 frames per
// doorbell, sender pinned to CPU 0 and receiver to CPU 1, C reference
// receiver (TPACKET_V3 ring), medians of 7 alternating 3-second runs:
//
//	sender                       frames/s   sender CPU per frame
//	C afp_send, sendmmsg          229 k      3.16 µs
//	afpacket TxMmsg               255 k      3.32 µs
//	afpacket TxRing               240 k      3.53 µs
//	C afp_send, TX ring (V2)      257 k      3.29 µs
//
// Both modes are level with C: over 99% of the sender's time is the
// kernel's (transmit, and on veth the receive side's softirq too, on the
// sender's core), and run-to-run noise on this machine (other programs
// pinned to the same cores) is larger than the differences in frames per
// second; CPU per frame is the steadier figure, and it puts sendmmsg 5%
// ahead of the ring, hence the default. BenchmarkXmit (sender and receiver
// in one process) reports it as cpu-ns/frame: 3.4 to 3.9 µs for both modes
// at burst 64, 64 to 1500 bytes.
//
// Two things in the Go runtime cost more than the driver's own work (under
// 1% of the sender's samples in a CPU profile). The doorbells are raw system
// calls: through the runtime's syscall path, a 200 µs sendmmsg let the
// runtime's monitor take the P from the sending thread every time (six to
// ten times as many context switches, a few percent more CPU per frame).
// And Wait blocks in ppoll(2) rather than in the runtime's poller, which
// registers for POLLOUT too: a packet socket signals POLLOUT for every frame
// the kernel frees after sending it, which woke the poller's thread once per
// frame and made sendmmsg look 1.5 times slower than the ring when sender
// and receiver shared a process.
//
// # What it is not
//
// It is not a capture library: it has no pcap files, no filter compiler
// (Config.Filter takes a compiled classic BPF program) and no timestamps
// beyond the kernel's software one. It offers no transmit offloads: frames
// are sent as they are (a CHECKSUM_PARTIAL checksum is completed in
// software), and received as the kernel has them (with GRO on, or from a
// GSO sender on a veth, a frame may exceed the MTU; Config.VnetHdr says
// how it is made of packets).
// Linux only: elsewhere Open returns an error wrapping errors.ErrUnsupported.
package afpacket
