//go:build linux

package afpacket

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/internal/life"
	"github.com/skbdev/skb/internal/mmsg"
	"github.com/skbdev/skb/internal/ring"
	"github.com/skbdev/skb/internal/thread"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Layout of TPACKET_V3 (include/uapi/linux/if_packet.h), byte offsets.
const (
	// struct tpacket_block_desc: version, offset_to_priv, then
	// tpacket_hdr_v1.
	bdStatus     = 8  // block_status
	bdNumPkts    = 12 // num_pkts
	bdFirstPkt   = 16 // offset_to_first_pkt
	bdHeaderSize = 48 // sizeof(struct tpacket_block_desc)

	// struct tpacket3_hdr.
	hNext    = 0  // tp_next_offset
	hSec     = 4  // tp_sec
	hNsec    = 8  // tp_nsec
	hSnaplen = 12 // tp_snaplen
	hLen     = 16 // tp_len
	hStatus  = 20 // tp_status
	hMac     = 24 // tp_mac (u16)
	hVlanTCI = 32 // hv1.tp_vlan_tci
	hVlanTP  = 36 // hv1.tp_vlan_tpid (u16)
	hSize    = 48 // TPACKET_ALIGN(sizeof(struct tpacket3_hdr))

	// struct sockaddr_ll (20 bytes) follows the header; the frame's
	// bytes start after it (tp_mac).
	sllPkttype = hSize + 10
	sllEnd     = hSize + 20

	// txData is where a transmit slot's frame starts: TPACKET3_HDRLEN minus
	// the sockaddr_ll (tpacket_parse_header without PACKET_TX_HAS_OFF).
	txData = hSize

	// vnetHdrLen is the length of struct virtio_net_hdr, which PACKET_VNET_HDR
	// puts before every frame (Config.VnetHdr). Its fields, in the host's
	// byte order (virtio_legacy_is_little_endian): flags, gso_type (u8 each),
	// hdr_len, gso_size, csum_start, csum_offset (u16 each).
	vnetHdrLen    = 10
	vnetFlags     = 0
	vnetGSOType   = 1
	vnetGSOSize   = 4
	vnetCsumStart = 6
	vnetNeedsCsum = 1    // VIRTIO_NET_HDR_F_NEEDS_CSUM
	vnetGSOTCPv4  = 1    // VIRTIO_NET_HDR_GSO_TCPV4
	vnetGSOTCPv6  = 4    // VIRTIO_NET_HDR_GSO_TCPV6
	vnetGSOUDPL4  = 5    // VIRTIO_NET_HDR_GSO_UDP_L4
	vnetGSOECN    = 0x80 // VIRTIO_NET_HDR_GSO_ECN

	// tx status bits meaning the kernel still owns a slot.
	txBusy = unix.TP_STATUS_SEND_REQUEST | unix.TP_STATUS_SENDING | unix.TP_STATUS_WRONG_FORMAT
)

// Device is one AF_PACKET socket bound to one interface: a TPACKET_V3
// receive ring and sendmmsg(2) or a PACKET_TX_RING for transmit. It is one
// queue of a netdev.Device: Xmit, Flush, TxAvail, Poll, Wait and Cache belong
// to one goroutine; Stats, RingStats and Close are safe from any goroutine.
type Device struct {
	cfg  Config
	g    geometry
	fd   int
	efd  int // eventfd that Close signals to wake a blocked Wait
	ring *ring.Region
	mem  []byte // the whole mapping: receive ring then transmit ring
	rx   []byte // receive ring (nil for TxOnly)
	tx   []byte // transmit ring (TxRing only)

	fdPrivate bool // fd and efd were opened in a private descriptor table (thread.Private)

	ifindex  int
	linkDown bool // Wait saw the interface go down (ENETDOWN)
	empty    uint // Polls that found nothing (linkPolls)
	mtu      int
	mac      header.MAC
	group    uint16
	ownPool  *pool.Pool
	cache    *pool.Cache
	extraHR  int          // headroom reserved beyond the cache's
	cbreak   int          // copybreak threshold (0: off)
	parsed   header.Frame // the frame being received, parsed in place
	fullSize int          // buffer size for frames at or above the threshold

	// state counts the owner's calls in progress (in units of 2), plus
	// pollMark while Poll runs, and has bit 0 set once Close began: Close
	// waits for the count to drain before it releases the socket and the
	// rings, unless Poll runs, whose return then releases them. Nested
	// calls (Xmit from Poll's handler) count twice.
	state    atomic.Int32
	readers  life.Readers // Stats reading the kernel's ring counters
	closeMu  sync.Mutex
	closed   bool // under closeMu
	down     sync.Once
	closeErr error // the teardown's, set once under down

	ctr  netdev.Counters
	ext  extCounters
	kdrp atomic.Uint64 // tp_drops read from PACKET_STATISTICS
	kfrz atomic.Uint64 // tp_freeze_q_cnt

	// Receive position: block rxBlk; when rxLeft > 0 the block is being
	// consumed, rxLeft frames remain and the next is at rxOff.
	rxBlk  int
	rxLeft int
	rxOff  int

	// Transmit, TxMmsg: txq[:txn] are queued, batch points at their data.
	batch *mmsg.Batch
	txq   []*skb.Buff
	txn   int
	// Transmit, TxRing: slots [txFirst, txFirst+txPend) are filled and not
	// yet kicked; txHead is the next slot to fill.
	txHead, txFirst, txPend int

	pfds [2]unix.PollFd // Wait's: the socket and efd
	ts   unix.Timespec
	errs errSet
}

// extCounters are RingStats' live counters, written by the owner goroutine
// once per Poll.
type extCounters struct {
	unparsed, outgoing, blocks atomic.Uint64
}

// RingStats are the counters of an AF_PACKET device beyond netdev.Stats.
type RingStats struct {
	// RxUnparsed counts frames delivered whose headers did not parse (see
	// Config.DropMalformed): their buffers have the header offsets as far as
	// parsing got.
	RxUnparsed uint64
	// RxOutgoing counts frames the host itself sent that reached the ring
	// and were skipped (Config.Outgoing false).
	RxOutgoing uint64
	// RxBlocks counts receive blocks consumed and handed back.
	RxBlocks uint64
	// RxFreezes counts the times the kernel found the receive ring full
	// (tp_freeze_q_cnt of PACKET_STATISTICS).
	RxFreezes uint64
}

// errSet holds the errors the hot path returns, made once at Open so that
// returning one allocates nothing.
type errSet struct {
	xmitClosed, flushClosed, pollClosed, waitClosed error
	queueFull, tooBig, short, timeout               error
	noBuf, noBufTooBig                              error // Xmit's pool errors: ErrExhausted, skb.ErrTooBig
	errnos                                          []errnoErr
}

type errnoErr struct {
	op    string
	errno unix.Errno
	err   error
}

// Open opens an AF_PACKET device on cfg.Ifname in the network namespace of
// the calling goroutine's thread (lock it there, as lab.Host.Do does, or run
// the program with `ip netns exec`). It needs CAP_NET_RAW; without it the
// error matches os.ErrPermission. Errors are prefixed "afpacket: open
// <ifname>: " and wrap ErrConfig, the errno of the failing call (ENODEV for
// a missing interface), or the pool's error. The caller must Close the
// device.
func Open(cfg Config) (*Device, error) {
	if err := cfg.Config.Validate(); err != nil {
		return nil, openError(cfg.Ifname, netdev.ConfigError(ErrConfig, err))
	}
	g, err := cfg.check(os.Getpagesize())
	if err != nil {
		return nil, openError(cfg.Ifname, err)
	}
	prog, err := cfg.filter()
	if err != nil {
		return nil, openError(cfg.Ifname, err)
	}
	d := &Device{cfg: cfg, g: g, fd: -1, efd: -1}
	if err := d.open(prog); err != nil {
		d.release()
		return nil, openError(cfg.Ifname, err)
	}
	return d, nil
}

// open makes the socket, its rings and the buffers; on error the caller
// releases what was made.
func (d *Device) open(prog []bpf.RawInstruction) error {
	cfg, g := &d.cfg, &d.g
	// Protocol 0: nothing is queued to the socket before the rings, filter
	// and bind are in place.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	d.fd, d.fdPrivate = fd, thread.Private()
	if err := d.ifinfo(); err != nil {
		return err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("PACKET_VERSION: %w", err)
	}
	if !cfg.UseQdisc {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
		}
	}
	if cfg.VnetHdr {
		// Before the rings: the kernel refuses it on a socket with one.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fmt.Errorf("PACKET_VNET_HDR: %w", err)
		}
	}
	if !cfg.Outgoing && !cfg.TxOnly {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
		}
	}
	joining := cfg.Fanout != FanoutNone && !cfg.TxOnly
	switch {
	case joining:
		// Bound before it joins its group, the socket would take
		// frames on its own hook meanwhile, frames the group hands to
		// another member too: it takes none until it has joined.
		if err := attachFilter(fd, dropAll); err != nil {
			return err
		}
	case prog != nil && !cfg.TxOnly:
		if err := attachFilter(fd, prog); err != nil {
			return err
		}
	}
	rxSize, txSize := 0, 0
	if !cfg.TxOnly {
		req := unix.TpacketReq3{
			Block_size:       uint32(g.blockSize),
			Block_nr:         uint32(g.blockCount),
			Frame_size:       uint32(g.frameSize),
			Frame_nr:         uint32(g.blockSize / g.frameSize * g.blockCount),
			Retire_blk_tov:   uint32(g.timeoutMS),
			Sizeof_priv:      0,
			Feature_req_word: 0,
		}
		if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes): %w", g.blockCount, g.blockSize, err)
		}
		rxSize = g.blockSize * g.blockCount
	}
	if g.mode == TxRing {
		// Slots hold the largest frame the interface sends.
		if need := (d.mtu + header.EthernetHeaderLen + header.VLANTagLen + txData + d.vnetLen() + 15) &^ 15; need > g.txFrameSize {
			g.txFrameSize = need
			g.txBlockSize = txBlock(need, os.Getpagesize())
		}
		per := g.txBlockSize / g.txFrameSize
		nblk := (g.txFrames + per - 1) / per
		g.txFrames = nblk * per
		req := unix.TpacketReq3{
			Block_size: uint32(g.txBlockSize),
			Block_nr:   uint32(nblk),
			Frame_size: uint32(g.txFrameSize),
			Frame_nr:   uint32(g.txFrames),
		}
		if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
			return fmt.Errorf("PACKET_TX_RING (%d frames of %d bytes): %w", g.txFrames, g.txFrameSize, err)
		}
		txSize = g.txBlockSize * nblk
	}
	if rxSize+txSize > 0 {
		r, err := ring.Map(fd, 0, rxSize+txSize, true)
		if err != nil {
			return err
		}
		d.ring = r
		d.mem = r.Bytes()
		d.rx = d.mem[:rxSize:rxSize]
		d.tx = d.mem[rxSize:]
	}
	proto := uint16(0)
	if !cfg.TxOnly {
		proto = unix.ETH_P_ALL
		if cfg.Protocol != 0 {
			proto = cfg.Protocol
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: d.ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if err := d.hwaddr(); err != nil {
		return err
	}
	if cfg.Fanout != FanoutNone {
		if err := d.joinFanout(); err != nil {
			return err
		}
	}
	if joining {
		if prog != nil {
			err = attachFilter(fd, prog)
		} else if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0); err != nil {
			err = fmt.Errorf("SO_DETACH_FILTER: %w", err)
		}
		if err != nil {
			return err
		}
	}
	if cfg.Promisc && !cfg.TxOnly {
		mreq := unix.PacketMreq{Ifindex: int32(d.ifindex), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fmt.Errorf("PACKET_ADD_MEMBERSHIP promisc: %w", err)
		}
	}
	if err := d.buffers(); err != nil {
		return err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	d.efd = efd
	d.makeErrors()
	return nil
}

// ifinfo reads the interface's index, MTU and MAC address (SIOCGIFINDEX,
// SIOCGIFMTU, SIOCGIFHWADDR).
func (d *Device) ifinfo() error {
	ifr, err := unix.NewIfreq(d.cfg.Ifname)
	if err != nil {
		return fmt.Errorf("interface name: %w", err)
	}
	if err := unix.IoctlIfreq(d.fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fmt.Errorf("SIOCGIFINDEX: %w", err)
	}
	d.ifindex = int(ifr.Uint32())
	if err := unix.IoctlIfreq(d.fd, unix.SIOCGIFMTU, ifr); err != nil {
		return fmt.Errorf("SIOCGIFMTU: %w", err)
	}
	d.mtu = int(ifr.Uint32())
	return nil
}

// hwaddr reads the interface's MAC address from the bound socket's name
// (packet_getname copies dev_addr into sll_addr).
func (d *Device) hwaddr() error {
	sa, err := unix.Getsockname(d.fd)
	if err != nil {
		return fmt.Errorf("getsockname: %w", err)
	}
	if ll, ok := sa.(*unix.SockaddrLinklayer); ok && ll.Halen == 6 {
		copy(d.mac[:], ll.Addr[:6])
	}
	return nil
}

// dropAll is the classic BPF program that takes no frame (BPF_RET|BPF_K 0).
var dropAll = []bpf.RawInstruction{{Op: 0x06, K: 0}}

// attachFilter attaches the classic BPF program prog (SO_ATTACH_FILTER).
func attachFilter(fd int, prog []bpf.RawInstruction) error {
	f := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		f[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	if len(f) == 0 || len(f) > 4096 {
		return netdev.ConfigErrorf(ErrConfig, "filter of %d instructions (1 to 4096)", len(f))
	}
	fp := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		return fmt.Errorf("SO_ATTACH_FILTER: %w", err)
	}
	return nil
}

// joinFanout adds the socket to its fanout group (PACKET_FANOUT); group 0
// asks for a unique id and reads back the one the kernel chose.
func (d *Device) joinFanout() error {
	cfg := &d.cfg
	tf := uint32(cfg.Fanout-1) | uint32(cfg.FanoutFlags)
	if !cfg.Outgoing {
		// The group's hook replaces the socket's: PACKET_IGNORE_OUTGOING
		// does not apply to it.
		tf |= unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING
	}
	if cfg.FanoutGroup == 0 && !cfg.FanoutJoin {
		tf |= unix.PACKET_FANOUT_FLAG_UNIQUEID
	}
	if err := unix.SetsockoptInt(d.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, int(uint32(cfg.FanoutGroup)|tf<<16)); err != nil {
		return fmt.Errorf("PACKET_FANOUT group %d mode %v: %w", cfg.FanoutGroup, cfg.Fanout, err)
	}
	v, err := unix.GetsockoptInt(d.fd, unix.SOL_PACKET, unix.PACKET_FANOUT)
	if err != nil {
		return fmt.Errorf("PACKET_FANOUT read back: %w", err)
	}
	d.group = uint16(v)
	return nil
}

// buffers sets up the pool, the cache and the transmit queue.
func (d *Device) buffers() error {
	cfg := &d.cfg
	hr := cfg.HeadroomBytes()
	p := cfg.Pool
	if p == nil {
		var err error
		p, err = pool.New(pool.Config{Headroom: hr, Name: "afpacket " + cfg.Ifname})
		if err != nil {
			return err
		}
		d.ownPool = p
	}
	d.cache = p.NewCache()
	d.extraHR = max(0, hr-d.cache.Headroom())
	d.cbreak = cfg.CopybreakThreshold()
	d.fullSize = max(0, pool.FrameSize-d.cache.Headroom()-d.extraHR)
	if d.g.mode == TxMmsg {
		d.batch = mmsg.NewBatch(d.g.batch, false, 0)
	}
	d.txq = make([]*skb.Buff, d.g.batch)
	return nil
}

func (d *Device) makeErrors() {
	name := d.cfg.Ifname
	closed := func(op string) error {
		return fmt.Errorf("afpacket: %s %s: %w", op, name, netdev.ErrClosed)
	}
	d.errs = errSet{
		xmitClosed:  closed("xmit"),
		flushClosed: closed("flush"),
		pollClosed:  closed("poll"),
		waitClosed:  closed("wait"),
		queueFull:   fmt.Errorf("afpacket: xmit %s: %w", name, netdev.ErrQueueFull),
		tooBig:      fmt.Errorf("afpacket: xmit %s: %w", name, netdev.ErrTooBig),
		short:       fmt.Errorf("afpacket: xmit %s: %w", name, ErrShortFrame),
		timeout:     fmt.Errorf("afpacket: wait %s: %w", name, netdev.ErrTimeout),
		noBuf:       fmt.Errorf("afpacket: xmit %s: %w", name, pool.ErrExhausted),
		noBufTooBig: fmt.Errorf("afpacket: xmit %s: %w", name, skb.ErrTooBig),
	}
}

// errno returns the error "afpacket: <op> <ifname>: <errno>", wrapping the
// errno and, for EAGAIN and ENOBUFS, netdev.ErrQueueFull. The first few are
// kept, so that an error repeated in a loop does not allocate.
func (d *Device) errno(op string, e unix.Errno) error {
	for _, x := range d.errs.errnos {
		if x.errno == e && x.op == op {
			return x.err
		}
	}
	var err error
	if e == unix.EAGAIN || e == unix.ENOBUFS {
		err = fmt.Errorf("afpacket: %s %s: %w: %w", op, d.cfg.Ifname, netdev.ErrQueueFull, e)
	} else {
		err = fmt.Errorf("afpacket: %s %s: %w", op, d.cfg.Ifname, e)
	}
	if len(d.errs.errnos) < 8 {
		d.errs.errnos = append(d.errs.errnos, errnoErr{op, e, err})
	}
	return err
}

// Ifname returns the interface name the device is bound to.
func (d *Device) Ifname() string { return d.cfg.Ifname }

// Ifindex returns the interface index, in the namespace the device was opened in.
func (d *Device) Ifindex() int { return d.ifindex }

// MTU returns the interface MTU in bytes as read at Open; Xmit accepts frames
// of up to MTU+14 bytes (MTU+18 with a VLAN tag).
func (d *Device) MTU() int { return d.mtu }

// HardwareAddr returns the interface's MAC address as read at Open.
func (d *Device) HardwareAddr() header.MAC { return d.mac }

// TxMode returns the transmit mode in use (never TxDefault).
func (d *Device) TxMode() TxMode { return d.g.mode }

// FanoutGroup returns the fanout group id the device joined (the one the
// kernel chose when Config.FanoutGroup was 0), or 0 without fanout.
func (d *Device) FanoutGroup() uint16 { return d.group }

// Cache returns the pool cache the device allocates receive buffers from
// (netdev.Device). Use it from the device's goroutine only.
func (d *Device) Cache() *pool.Cache { return d.cache }

// enter registers a call of the owner goroutine; it reports false once
// Close began.
func (d *Device) enter() bool {
	if d.state.Add(2)&1 != 0 {
		d.exit()
		return false
	}
	return true
}

// exit ends what enter began; the last one out of a closed device tears it
// down (once: Close's own wait may also find it empty). Stats takes no
// such reference (d.readers): the teardown closes the Cache, which must
// not happen on another goroutine while the owner may free into it.
func (d *Device) exit() {
	if d.state.Add(-2) == 1 {
		d.teardown()
	}
}

// closing reports whether Close has begun.
func (d *Device) closing() bool { return d.state.Load()&1 != 0 }

// Stats returns a snapshot of the device's counters (netdev.Device). It reads
// the kernel's ring drop count (PACKET_STATISTICS, rx_dropped_kernel) first.
// Safe for concurrent use.
func (d *Device) Stats() netdev.Stats {
	if d.readers.Enter(d.closing) {
		d.kernelStats()
		d.readers.Exit()
	}
	s := d.ctr.Snapshot()
	s.RxDropped[netdev.DropKernel] += d.kdrp.Load()
	return s
}

// RingStats returns the counters beyond netdev.Stats. Safe for concurrent
// use; figures are as of the last completed Poll.
func (d *Device) RingStats() RingStats {
	return RingStats{
		RxUnparsed: d.ext.unparsed.Load(),
		RxOutgoing: d.ext.outgoing.Load(),
		RxBlocks:   d.ext.blocks.Load(),
		RxFreezes:  d.kfrz.Load(),
	}
}

// kernelStats adds the kernel's drop and freeze counts since the last read
// (PACKET_STATISTICS resets them) to the device's.
func (d *Device) kernelStats() {
	if d.rx == nil {
		return
	}
	drops, freezes, e := packetStats(d.fd)
	if e != 0 {
		return
	}
	if drops != 0 {
		d.kdrp.Add(uint64(drops))
	}
	if freezes != 0 {
		d.kfrz.Add(uint64(freezes))
	}
}

// Close stops the device (netdev.Device): it waits for a call in progress on
// the owner goroutine to return, wakes a blocked Wait, drops what Xmit had
// queued (counted tx_dropped_closed), unmaps the rings, closes the socket and
// the cache, and closes the pool when the device made it (an error wrapping
// pool.ErrLeak then means received buffers were not freed). Safe for
// concurrent use; later calls return an error matching net.ErrClosed. It
// must not race with the owner using the Cache outside the device's methods
// (netdev.Device.Cache): stop such an owner first.
//
// Called while Poll runs (from its handler, or from another goroutine) it
// does not wait: Poll hands nothing more over and returns an error matching
// net.ErrClosed, the device is torn down as Poll returns (frames still in
// the ring are discarded with it, counted in rx_dropped_closed), and an
// error of the teardown is then not reported.
func (d *Device) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	if d.closed {
		return fmt.Errorf("afpacket: close %s: %w", d.cfg.Ifname, netdev.ErrClosed)
	}
	d.closed = true
	// A reference of Close's own, so that Poll's return cannot tear the
	// device down (and close the eventfd) before the wake-up is written.
	d.state.Add(2)
	old := d.state.Or(1)
	// Wake a Wait blocked in ppoll; the counter stays set, so a Wait about
	// to block returns at once too.
	one := [8]byte{1}
	unix.Write(d.efd, one[:])
	if d.state.Add(-2) == 1 {
		// Nobody inside, or a Poll that returned meanwhile.
		return d.teardown()
	}
	if old >= pollMark {
		// Poll runs (perhaps this is its handler): it tears down as it
		// returns.
		return nil
	}
	for spin := 0; d.state.Load() != 1; spin++ {
		// The owner is inside a call: it returns soon, and cannot start
		// another.
		if spin < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return d.teardown()
}

// pollMark is what Poll adds to state beside its reference, so that Close
// called while the handler runs does not wait for Poll to return.
const pollMark = 1 << 24

// enterPoll and exitPoll are enter and exit for Poll; the exit that leaves
// a closed device empty tears it down.
//
// A Poll entered while another runs (from its handler) panics, after
// undoing its entry: see netdev.NestedPoll.
func (d *Device) enterPoll() bool {
	s := d.state.Add(2 + pollMark)
	if s&1 == 0 && s < 2*pollMark {
		return true
	}
	d.exitPoll()
	if s&1 == 0 {
		netdev.NestedPoll("afpacket")
	}
	return false
}

func (d *Device) exitPoll() {
	if d.state.Add(-(2 + pollMark)) == 1 {
		d.teardown()
	}
}

// teardown releases the device, once, after Close when no call of the
// owner is in progress; later calls return the first's error.
func (d *Device) teardown() error {
	d.down.Do(func() {
		d.readers.Wait()
		d.kernelStats()
		// The owner is out and stays out: drop what it queued.
		for i := range d.txn {
			d.txq[i].Free()
			d.txq[i] = nil
		}
		d.ctr.TxDrop(netdev.DropClosed, d.txn+d.txPend)
		d.txn, d.txPend = 0, 0
		var err error
		// In the table the device was opened in: the process's, also
		// when the last call out is on a thread with a private one
		// (netdev.RunOnThread).
		thread.Release(d.fdPrivate, func() { err = d.release() })
		if err != nil {
			d.closeErr = fmt.Errorf("afpacket: close %s: %w", d.cfg.Ifname, err)
		}
	})
	return d.closeErr
}

// ringLeft counts the frames the kernel left in the receive ring that no
// Poll handed over (the rest of the block being walked, and every block
// handed to user space) as rx_dropped_closed.
func (d *Device) ringLeft() {
	bs := d.g.blockSize
	k := d.rxLeft
	for i := range d.g.blockCount {
		if i == d.rxBlk && d.rxLeft > 0 {
			continue // partly walked: its rest is rxLeft
		}
		base := i * bs
		if ring.Load32(d.rx, base+bdStatus)&unix.TP_STATUS_USER != 0 {
			k += int(ne.Uint32(d.rx[base+bdNumPkts:]))
		}
	}
	if k > 0 {
		d.ctr.RxDrop(netdev.DropClosed, k)
	}
}

// release closes the socket and the eventfd, unmaps the rings and closes the
// cache and the pool made here. The owner's calls, Wait included, have
// returned and cannot start again.
func (d *Device) release() error {
	var errs []error
	if d.fd >= 0 {
		errs = append(errs, unix.Close(d.fd))
		d.fd = -1
	}
	if d.efd >= 0 {
		errs = append(errs, unix.Close(d.efd))
		d.efd = -1
	}
	if len(d.rx) > 0 {
		d.ringLeft()
	}
	if d.ring != nil {
		errs = append(errs, d.ring.Unmap())
	}
	// d.rx and d.tx keep pointing at the unmapped memory: every reader
	// checks the closed bit first (enter).
	if d.cache != nil {
		d.cache.Close()
	}
	if d.ownPool != nil {
		errs = append(errs, d.ownPool.Close())
	}
	return errors.Join(errs...)
}

// Wait blocks until Poll has a frame to receive or timeout passes; a
// negative timeout waits without limit (netdev.Device). It blocks the thread
// in ppoll(2) on the socket (POLLIN, which the kernel signals when it hands
// a block to the process) and on an eventfd that Close signals. It returns
// nil, an error matching netdev.ErrTimeout (os.ErrDeadlineExceeded), one
// matching net.ErrClosed once the device is closed (Close wakes a blocked
// Wait), ENODEV once the interface was removed, or the socket's pending
// error (SO_ERROR), each prefixed "afpacket: wait <ifname>: ". An
// interface that goes down (ENETDOWN) is waited on: nothing arrives until
// it is up again, when the kernel hooks the socket in again.
//
// The runtime's poller is not used on purpose: it registers for POLLOUT
// too, and a packet socket signals POLLOUT each time the kernel frees a
// frame it sent, which woke the poller's thread once per frame.
func (d *Device) Wait(timeout time.Duration) error {
	if !d.enter() {
		return d.errs.waitClosed
	}
	defer d.exit()
	if d.rxReady() {
		return nil
	}
	if timeout == 0 {
		return d.errs.timeout
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		var tsp *unix.Timespec
		slice := time.Duration(-1)
		if timeout > 0 {
			slice = time.Until(deadline)
			if slice <= 0 {
				return d.errs.timeout
			}
		}
		if d.linkDown && (slice < 0 || slice > linkCheck) {
			// Down: a removal says nothing to the socket; look for it.
			slice = linkCheck
		}
		if slice >= 0 {
			d.ts = unix.NsecToTimespec(int64(slice))
			tsp = &d.ts
		}
		d.pfds[0] = unix.PollFd{Fd: int32(d.fd), Events: unix.POLLIN}
		d.pfds[1] = unix.PollFd{Fd: int32(d.efd), Events: unix.POLLIN}
		n, err := unix.Ppoll(d.pfds[:], tsp, nil)
		switch {
		case d.state.Load()&1 != 0:
			return d.errs.waitClosed
		case err == unix.EINTR:
			continue
		case err != nil:
			return d.errno("wait", err.(unix.Errno))
		case n == 0:
			if d.linkDown && !d.linkExists() {
				return d.errno("wait", unix.ENODEV)
			}
			if timeout < 0 || time.Now().Before(deadline) {
				continue // a link check's slice, not the timeout
			}
			return d.errs.timeout
		case d.pfds[0].Revents&unix.POLLERR != 0:
			if err := d.linkError("wait"); err != nil {
				return err
			}
		}
		if d.rxReady() {
			return nil
		}
	}
}

// linkCheck is how often a Wait on an interface that went down looks for
// its removal; linkPolls, after how many empty Polls (a power of two) a
// spinning receiver's Poll looks at the socket's pending error, the only
// sign of a removed interface it could otherwise miss (1.3 ms of empty
// Polls at 20 ns each).
const (
	linkCheck = 100 * time.Millisecond
	linkPolls = 1 << 16
)

// linkError reads the socket's pending error (SO_ERROR) and returns it as
// op's error, or ENODEV once the interface was removed; nil while there is
// none, and for an interface that went down but still exists: the kernel
// hooks the socket in again once it is up (packet_notifier), so Wait and
// Poll wait on, and look for its removal, which says nothing to a socket
// already unhooked, every linkCheck or linkPolls.
func (d *Device) linkError(op string) error {
	e, err := unix.GetsockoptInt(d.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err == nil && e == int(unix.ENETDOWN) && d.linkExists():
		d.linkDown = true
	case err == nil && e != 0:
		return d.errno(op, unix.Errno(e))
	case d.linkDown && !d.linkExists():
		return d.errno(op, unix.ENODEV)
	}
	return nil
}

// linkExists reports whether the device's interface still exists
// (SIOCGIFNAME on its index, netdevice(7)): false once it was removed.
func (d *Device) linkExists() bool {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return true
	}
	ifr.SetUint32(uint32(d.ifindex))
	return unix.IoctlIfreq(d.fd, unix.SIOCGIFNAME, ifr) != unix.ENODEV
}

// rxReady reports whether the current receive block is the process's.
func (d *Device) rxReady() bool {
	if d.rx == nil {
		return false
	}
	if d.rxLeft > 0 {
		return true
	}
	return ring.Load32(d.rx, d.rxBlk*d.g.blockSize+bdStatus)&unix.TP_STATUS_USER != 0
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// OpenFanout opens n devices on cfg.Ifname in one fanout group, so that n
// goroutines each own one queue of the interface's received frames. Device
// i has Queue cfg.Queue+i. cfg.Fanout FanoutNone means FanoutHash (a flow
// stays on one device); cfg.FanoutGroup 0 without cfg.FanoutJoin lets the
// kernel choose an unused group id. On error the devices already opened are closed. The caller must
// Close every device.
func OpenFanout(cfg Config, n int) ([]*Device, error) {
	if n < 1 {
		return nil, openError(cfg.Ifname, netdev.ConfigErrorf(ErrConfig, "fanout of %d devices", n))
	}
	if cfg.Fanout == FanoutNone {
		cfg.Fanout = FanoutHash
	}
	devs := make([]*Device, 0, n)
	for i := range n {
		c := cfg
		c.Queue = cfg.Queue + i
		if i > 0 {
			c.FanoutGroup, c.FanoutJoin = devs[0].FanoutGroup(), true
		}
		d, err := Open(c)
		if err != nil {
			for _, o := range devs {
				o.Close()
			}
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// GSOFrames reports whether Poll hands over GSO super-frames with their
// GSO fields set (Config.VnetHdr).
func (d *Device) GSOFrames() bool { return d.cfg.VnetHdr }

// ChecksumStates returns true: Poll sets each frame's checksum state from
// the kernel's (CHECKSUM_UNNECESSARY when it verified the checksum,
// CHECKSUM_PARTIAL when the frame came from this host with its checksum
// still to be computed), so a frame left CHECKSUM_NONE carries a checksum
// to verify (traffic.ChecksumStater).
func (d *Device) ChecksumStates() bool { return true }

// vnetLen is the length of the header PACKET_VNET_HDR puts before each frame
// on this socket: vnetHdrLen with Config.VnetHdr, else 0.
func (d *Device) vnetLen() int {
	if d.cfg.VnetHdr {
		return vnetHdrLen
	}
	return 0
}
