package afpacket

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/net/bpf"

	"github.com/skbdev/skb/netdev"
)

// TxMode chooses how Xmit hands frames to the kernel. The zero value is
// DefaultTxMode.
type TxMode uint8

const (
	// TxDefault picks DefaultTxMode.
	TxDefault TxMode = iota
	// TxMmsg queues the caller's buffers and sends the batch with one
	// sendmmsg(2) as the doorbell, one message per frame; the kernel copies
	// each frame into a new sk_buff (packet_snd). The buffers are freed after
	// the doorbell.
	TxMmsg
	// TxRing copies each frame into the next slot of a PACKET_TX_RING
	// (TPACKET_V3 frames, Documentation/networking/packet_mmap.rst) and rings
	// the doorbell with one send(2) of no data (tpacket_snd), which sends
	// every slot marked TP_STATUS_SEND_REQUEST. The buffer is freed as soon
	// as it is copied: the ring holds the frame from then on.
	TxRing
)

// DefaultTxMode is the mode TxDefault selects: sendmmsg, which used 5% less
// CPU per frame than the transmit ring and sent about 6% more frames per
// second against the C reference (medians; see the package documentation),
// needs no ring memory and takes frames of any size up to the MTU. The
// transmit ring is within the machine's noise of it in BenchmarkXmit.
const DefaultTxMode = TxMmsg

// String returns "default", "mmsg" or "ring".
func (m TxMode) String() string {
	switch m {
	case TxDefault:
		return "default"
	case TxMmsg:
		return "mmsg"
	case TxRing:
		return "ring"
	}
	return fmt.Sprintf("TxMode(%d)", uint8(m))
}

// FanoutMode is how the kernel spreads received frames over the sockets of a
// fanout group (PACKET_FANOUT, packet(7)). The zero value, FanoutNone, joins
// no group.
type FanoutMode uint8

const (
	// FanoutNone: the socket is in no fanout group and sees every frame.
	FanoutNone FanoutMode = iota
	// FanoutHash: by flow hash, so a flow stays on one socket
	// (PACKET_FANOUT_HASH).
	FanoutHash
	// FanoutLB: round robin (PACKET_FANOUT_LB).
	FanoutLB
	// FanoutCPU: by the CPU the frame arrived on (PACKET_FANOUT_CPU).
	FanoutCPU
	// FanoutRollover: all to one socket until its ring is full, then the
	// next (PACKET_FANOUT_ROLLOVER).
	FanoutRollover
	// FanoutRandom: at random (PACKET_FANOUT_RND).
	FanoutRandom
	// FanoutQM: by the receive queue the device recorded
	// (PACKET_FANOUT_QM, skb queue_mapping).
	FanoutQM
)

// String returns the mode's short name: "none", "hash", "lb", "cpu",
// "rollover", "random" or "qm".
func (m FanoutMode) String() string {
	names := [...]string{"none", "hash", "lb", "cpu", "rollover", "random", "qm"}
	if int(m) < len(names) {
		return names[m]
	}
	return fmt.Sprintf("FanoutMode(%d)", uint8(m))
}

// FanoutFlag modifies a fanout mode (the PACKET_FANOUT_FLAG_* bits).
type FanoutFlag uint16

const (
	// FanoutFlagRollover moves a frame to another socket of the group when
	// the chosen one's ring is full (PACKET_FANOUT_FLAG_ROLLOVER).
	FanoutFlagRollover FanoutFlag = 0x1000
	// FanoutFlagDefrag reassembles IP fragments before choosing, so that
	// fragments of one datagram land on one socket
	// (PACKET_FANOUT_FLAG_DEFRAG).
	FanoutFlagDefrag FanoutFlag = 0x8000
)

// Ring geometry defaults.
const (
	// DefaultBlockSize is the receive ring's block size in bytes: 256 KiB,
	// room for about 2000 minimum-size frames or 120 full 1514-byte ones.
	DefaultBlockSize = 256 << 10
	// DefaultBlockCount is the number of receive blocks (16 MiB of ring
	// with the default block size).
	DefaultBlockCount = 64
	// DefaultFrameSize is the frame size in bytes: tp_frame_size of the
	// receive ring and the slot size of the transmit ring, which holds a
	// frame of up to DefaultFrameSize-48 bytes (the tpacket3_hdr before it)
	// and grows when the MTU needs more.
	DefaultFrameSize = 2048
	// DefaultBlockTimeout is the receive block retire timeout: a block that
	// holds frames is handed to the process after this long even when not
	// full, which bounds the latency of a lone frame (tp_retire_blk_tov,
	// whole milliseconds).
	DefaultBlockTimeout = time.Millisecond
	// DefaultTxFrames is the number of slots in the transmit ring (TxRing).
	DefaultTxFrames = 256
)

// Config configures a Device. The zero value with Ifname set is usable: it
// receives every frame on the interface into a TPACKET_V3 ring and transmits
// with DefaultTxMode.
type Config struct {
	// Config holds the settings every driver takes: Pool (nil: the device
	// makes its own, closed with it), Headroom, Copybreak, Batch (the
	// transmit batch: frames per doorbell).
	netdev.Config

	// Ifname is the interface to bind to, in the network namespace of the
	// calling goroutine's thread at Open. Required.
	Ifname string

	// Protocol is the EtherType to receive, in host byte order (0x0800 for
	// IPv4); 0 receives every protocol (ETH_P_ALL). It is the protocol the
	// socket is bound with: the kernel filters before the ring.
	Protocol uint16

	// TxMode is how Xmit sends; TxDefault means DefaultTxMode.
	TxMode TxMode

	// TxOnly makes a socket that receives nothing: no receive ring is
	// mapped and the socket is bound with protocol 0, as a pure sender
	// (pktgen) wants. Poll then always returns 0 and Wait only times out.
	TxOnly bool

	// UseQdisc sends through the interface's queueing discipline, where tc
	// and other packet sockets see the frames. By default the qdisc is
	// bypassed (PACKET_QDISC_BYPASS): faster, but nothing on the host sees
	// or shapes what the device sends.
	UseQdisc bool

	// Outgoing delivers frames the host itself sends on the interface
	// (sll_pkttype PACKET_OUTGOING). By default they are not queued to the
	// socket at all (PACKET_IGNORE_OUTGOING, or the fanout flag of that
	// name) and any that still arrive are skipped and counted.
	Outgoing bool

	// VnetHdr sets PACKET_VNET_HDR: the kernel puts a struct virtio_net_hdr
	// (10 bytes, include/uapi/linux/virtio_net.h) in front of every frame it
	// hands over and expects one in front of every frame sent. Poll reads
	// it: a GSO super-frame, which a veth hands over whole from a sender
	// with GSO or TSO on its other end (and a device with GRO from its
	// coalescing), gets GSOSize, GSOSegs and GSOType (skb.GSOUDPL4,
	// GSOTCPv4 or GSOTCPv6, with GSOTCPECN) from it, so that its packets
	// can be counted (rx_packets counts its segments) or segmented by the
	// caller (skb has no segmentation of its own: a forwarder drops such a
	// frame, or the sender runs with GSO and TSO off); without it such a
	// frame looks like one packet longer than the MTU. With it, the kernel drops (counted in
	// rx_dropped_kernel) every GSO frame its header cannot describe, which
	// it delivers without: GSO types other than TCP and UDP (SCTP, ESP,
	// GRE, tunnels on some kernels), and UDP GSO before Linux 6.2
	// (VIRTIO_NET_HDR_GSO_UDP_L4). Reading tpacket_rcv, such a drop with a
	// TPACKET_V3 ring leaves the frame's slot in its block with its header
	// unwritten (not seen here: this kernel has no SCTP): Poll counts it in
	// rx_dropped_malformed when the slot's offsets are out of range, and
	// once the ring has wrapped could hand over the bytes an earlier frame
	// left there. Senders of such GSO types are best kept off a VnetHdr
	// receiver. Xmit writes a header that asks for
	// nothing (no GSO, the checksum complete), in the buffer's headroom,
	// which it unshares first when the buffer is a clone (skb_cow_head).
	VnetHdr bool

	// Promisc puts the interface in promiscuous mode while the device is
	// open (PACKET_MR_PROMISC membership, dropped by the kernel at close).
	Promisc bool

	// SnapLen is the most bytes of a frame the kernel copies into the ring;
	// 0 means no limit but the ring's block. A longer frame arrives cut
	// (tp_snaplen < tp_len): it is dropped and counted in rx_truncated. It
	// is applied as a classic BPF program returning SnapLen, as tcpdump -s
	// does.
	SnapLen int

	// Filter is a classic BPF program run by the kernel on every frame
	// before the ring (SO_ATTACH_FILTER), such as `tcpdump -dd` prints; nil
	// accepts all. With SnapLen, each constant return above SnapLen is
	// lowered to it; a filter returning the accumulator cannot be combined
	// with SnapLen.
	Filter []bpf.RawInstruction

	// Fanout joins the socket to a fanout group with this mode, so that
	// several devices (one per goroutine, each one queue) share the
	// interface's frames. With FanoutJoin the group is FanoutGroup, made if
	// it does not exist (ids are per network namespace). Without it and
	// with FanoutGroup 0, the kernel makes a group with an unused id
	// (PACKET_FANOUT_FLAG_UNIQUEID, which can be 0 itself), which
	// Device.FanoutGroup reports for the others to join with FanoutJoin.
	// Every member must use the same Protocol, mode and flags. See
	// OpenFanout, which does all this.
	Fanout      FanoutMode
	FanoutGroup uint16
	FanoutJoin  bool
	FanoutFlags FanoutFlag

	// Queue is the queue number this device is, stored in every received
	// buffer's queue mapping (skb_set_queue_mapping). OpenFanout numbers
	// its devices from 0.
	Queue int

	// BlockSize is the receive block size in bytes, a multiple of the page
	// size (0: DefaultBlockSize); BlockCount the number of blocks (0:
	// DefaultBlockCount); FrameSize the frame size, a multiple of 16 that
	// divides BlockSize (0: DefaultFrameSize); BlockTimeout the block retire
	// timeout, rounded up to whole milliseconds (0: DefaultBlockTimeout).
	// The transmit ring's slots are FrameSize bytes, or more when a frame of
	// MTU+18 bytes (a VLAN-tagged one) would not fit.
	// A frame larger than a block cannot be received whole (it is counted
	// truncated).
	BlockSize    int
	BlockCount   int
	FrameSize    int
	BlockTimeout time.Duration

	// TxFrames is the number of transmit ring slots for TxRing (0:
	// DefaultTxFrames); it must be at least the batch.
	TxFrames int

	// DropMalformed drops received frames whose headers do not parse
	// (counted rx_dropped_malformed). By default they are delivered, since
	// a link-layer device carries whatever is on the link: the buffer then
	// has the header offsets as far as parsing got, and the frame is
	// counted in RingStats.RxUnparsed.
	DropMalformed bool
}

// geometry is a Config with the defaults filled in and checked.
type geometry struct {
	blockSize, blockCount, frameSize, timeoutMS int
	txFrames, txFrameSize, txBlockSize          int
	batch                                       int
	mode                                        TxMode
}

// check fills in the defaults and returns an error wrapping ErrConfig for
// values the kernel would refuse or that make no sense.
func (c *Config) check(pageSize int) (geometry, error) {
	g := geometry{
		blockSize:  c.BlockSize,
		blockCount: c.BlockCount,
		frameSize:  c.FrameSize,
		txFrames:   c.TxFrames,
		batch:      c.BatchSize(),
		mode:       c.TxMode,
	}
	if g.blockSize == 0 {
		g.blockSize = DefaultBlockSize
	}
	if g.blockCount == 0 {
		g.blockCount = DefaultBlockCount
	}
	if g.frameSize == 0 {
		g.frameSize = DefaultFrameSize
	}
	if g.txFrames == 0 {
		g.txFrames = max(DefaultTxFrames, g.batch)
	}
	if g.mode == TxDefault {
		g.mode = DefaultTxMode
	}
	tmo := c.BlockTimeout
	if tmo == 0 {
		tmo = DefaultBlockTimeout
	}
	g.timeoutMS = int((tmo + time.Millisecond - 1) / time.Millisecond)
	bad := func(format string, args ...any) (geometry, error) {
		return geometry{}, netdev.ConfigErrorf(ErrConfig, format, args...)
	}
	switch {
	case c.Ifname == "":
		return bad("no interface name")
	case g.mode > TxRing:
		return bad("tx mode %v", g.mode)
	case c.Fanout > FanoutQM:
		return bad("fanout mode %v", c.Fanout)
	case c.FanoutFlags&^(FanoutFlagRollover|FanoutFlagDefrag) != 0:
		return bad("fanout flags %#x", uint16(c.FanoutFlags))
	case c.Fanout == FanoutNone && (c.FanoutGroup != 0 || c.FanoutFlags != 0 || c.FanoutJoin):
		return bad("fanout group %d or flags %#x without a fanout mode", c.FanoutGroup, uint16(c.FanoutFlags))
	case c.Fanout != FanoutNone && c.TxOnly:
		return bad("fanout on a transmit-only device")
	case g.blockSize <= 0 || g.blockSize%pageSize != 0:
		return bad("block size %d is not a multiple of the page size %d", g.blockSize, pageSize)
	case g.blockCount <= 0:
		return bad("block count %d", g.blockCount)
	case g.frameSize < minFrameSize || g.frameSize%16 != 0 || g.blockSize%g.frameSize != 0:
		return bad("frame size %d: want a multiple of 16, at least %d, dividing the block size %d", g.frameSize, minFrameSize, g.blockSize)
	case uint64(g.blockSize) > math.MaxUint32 || uint64(g.blockCount) > math.MaxUint32/uint64(g.blockSize/g.frameSize):
		// The kernel counts them in 32 bits (struct tpacket_req3) and
		// refuses a ring of more frames than that (packet_set_ring).
		return bad("%d blocks of %d frames: more than the kernel's 32-bit counts", g.blockCount, g.blockSize/g.frameSize)
	case tmo < 0 || g.timeoutMS > 0xffff:
		return bad("block timeout %v", c.BlockTimeout)
	case g.txFrames < g.batch:
		return bad("%d transmit ring frames for a batch of %d", g.txFrames, g.batch)
	case c.SnapLen < 0:
		return bad("snap length %d", c.SnapLen)
	case c.Queue < 0 || c.Queue > 0xffff:
		return bad("queue %d", c.Queue)
	case c.Headroom < 0:
		return bad("headroom %d", c.Headroom)
	}
	g.txFrameSize = g.frameSize
	g.txBlockSize = txBlock(g.txFrameSize, pageSize)
	return g, nil
}

// txBlock returns the transmit ring's block size for slots of frameSize
// bytes: the smallest multiple of the slot size that is a multiple of the
// page size, so that blocks hold whole slots and slot i is at i*frameSize.
func txBlock(frameSize, pageSize int) int {
	b := frameSize
	for b%pageSize != 0 {
		b += frameSize
	}
	return b
}

// minFrameSize is the smallest frame that holds the tpacket3_hdr, the
// sockaddr_ll and an Ethernet header (TPACKET3_HDRLEN + ETH_HLEN, aligned).
const minFrameSize = 96

// filter returns the classic BPF program to attach for the filter and snap
// length, or nil for none.
func (c *Config) filter() ([]bpf.RawInstruction, error) {
	if c.SnapLen == 0 {
		return c.Filter, nil
	}
	if c.Filter == nil {
		return []bpf.RawInstruction{{Op: bpfRetK, K: uint32(c.SnapLen)}}, nil
	}
	prog := make([]bpf.RawInstruction, len(c.Filter))
	for i, ins := range c.Filter {
		switch ins.Op {
		case bpfRetK:
			ins.K = min(ins.K, uint32(c.SnapLen))
		case bpfRetA:
			return nil, netdev.ConfigErrorf(ErrConfig, "filter instruction %d returns the accumulator, which SnapLen cannot bound", i)
		}
		prog[i] = ins
	}
	return prog, nil
}

// Classic BPF return opcodes (BPF_RET|BPF_K and BPF_RET|BPF_A,
// include/uapi/linux/filter.h).
const (
	bpfRetK = 0x06
	bpfRetA = 0x16
)

var _ netdev.Device = (*Device)(nil)
