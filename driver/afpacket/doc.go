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
// dropped with Config.DropMalformed.
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
// On a 2-vCPU VM, veth between two namespaces, 64-byte UDP payloads (106-byte
// frames), sender pinned to CPU 0 and receiver to CPU 1, medians of 3
// four-second runs into the C TPACKET_V3 reference receiver: see the
// project's speed notes for the figures; both modes run within a few percent
// of the C reference (AF_PACKET sendmmsg), as the kernel's transmit and
// receive work (about 3 µs per frame, all of it on the sender's core) is
// the cost, and the driver's own work is under 60 ns per frame.
//
// # What it is not
//
// It is not a capture library: it has no pcap files, no filter compiler
// (Config.Filter takes a compiled classic BPF program) and no timestamps
// beyond the kernel's software one. It offers no offloads: frames are sent
// as they are (a CHECKSUM_PARTIAL checksum is completed in software) and
// received as the kernel has them (with GRO on, a frame may exceed the MTU).
// Linux only: elsewhere Open returns an error wrapping errors.ErrUnsupported.
package afpacket
