//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/mmsg"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// maxIovPerMsg is the most iovecs one message may carry: UIO_MAXIOV
// (include/uapi/linux/uio.h).
const maxIovPerMsg = 1024

// txq is the transmit queue: the packets Xmit queued, in order, and the
// headers one doorbell builds from them. Everything is allocated at Open.
type txq struct {
	pkts  []txPkt                  // queued packets, [0, n)
	names [][mmsg.SockaddrMax]byte // destination of each queued packet (unconnected socket)
	froms []byte                   // source cmsg of each queued packet (XmitFrom), mmsg.PktinfoSpace bytes apart
	n     int

	// One round of the doorbell: up to len(hdrs) messages gathering up to
	// len(iov) iovecs; msgs describes each message for the counters and
	// for a GSO fallback.
	hdrs []unix.Mmsghdr
	msgs []txMsg
	iov  []unix.Iovec
	ctrl []byte // one UDP_SEGMENT cmsg slot per message

	// stage holds copies of the small datagrams of GSO runs, each run sent
	// as one iovec (see stageBelow).
	stage []byte

	// lastDst is XmitTo's latest destination and lastName its struct
	// sockaddr (lastN bytes; 0: none yet): an echo server answering one
	// peer, or a generator's flow, checks and lays out each destination
	// once.
	lastDst  netip.AddrPort
	lastName [mmsg.SockaddrMax]byte
	lastN    int
	// lastPeer says lastDst is the connected peer: sent without an
	// address, as Xmit sends.
	lastPeer bool
}

// stageBelow is the datagram size under which the datagrams of a GSO run
// are copied into one staging buffer and sent as one iovec: for datagrams
// this small, the kernel's cost per iovec (an iov_iter step and a user
// access window each in copy_from_iter) exceeds the copy. Measured with
// 64-byte datagrams into a UDP_GRO socket on loopback, in 8 pairs of runs:
// 5.2-6.8 M datagrams/s staged against 3.4-5.8 M with an iovec each, the
// staged run ahead in every pair.
const stageBelow = 256

// stageCopy copies p's data into dst and returns its length.
func stageCopy(dst []byte, p *txPkt) int {
	if !p.b.IsNonlinear() {
		return copy(dst, p.b.Data())
	}
	p.b.CopyBits(0, dst[:p.n])
	return int(p.n)
}

// txPkt is one queued packet.
type txPkt struct {
	b    *skb.Buff
	n    int32  // bytes (Len)
	niov int32  // iovecs it needs: 1 for linear data
	gso  uint16 // segment size of a GSO super-packet, 0 for one datagram
	name uint8  // length of its destination in names, 0 for the connected peer
	from uint8  // length of its source cmsg in froms, 0 for none (the route picks)
}

// from returns the source cmsg of queued packet k (empty for none).
func (t *txq) from(k int) []byte {
	o := k * mmsg.PktinfoSpace
	return t.froms[o : o+int(t.pkts[k].from)]
}

// txMsg is one message of a doorbell round: it starts at byte off of
// packet pkt and carries segs datagrams of bytes bytes in all.
type txMsg struct {
	pkt, off int32
	segs     int32
	bytes    int32
	gso      bool // carries a UDP_SEGMENT cmsg
	from     bool // carries a source cmsg (XmitFrom)
	simple   bool // one whole linear packet, no cmsg: sendto will do
}

// txPos is where a doorbell round starts: byte off of packet pkt (off is
// non-zero only inside a super-packet sent in several messages).
type txPos struct{ pkt, off int }

// ctrlSlot is the control buffer of one message: a UDP_SEGMENT cmsg and
// a source (IP_PKTINFO or IPV6_PKTINFO).
var ctrlSlot = unix.CmsgSpace(2) + mmsg.PktinfoSpace

func (t *txq) init(batch int) {
	t.pkts = make([]txPkt, batch)
	t.names = make([][mmsg.SockaddrMax]byte, batch)
	t.froms = make([]byte, batch*mmsg.PktinfoSpace)
	t.hdrs = make([]unix.Mmsghdr, batch)
	t.msgs = make([]txMsg, batch)
	t.iov = make([]unix.Iovec, max(maxIovPerMsg, 4*batch))
	t.ctrl = make([]byte, batch*ctrlSlot)
	t.stage = make([]byte, min(batch, MaxGSOSegments)*stageBelow)
}

// Static errors of the transmit path, so that a drop allocates nothing.
var (
	errXmitTooBig4 = fmt.Errorf("udp: xmit: datagram longer than %d bytes, the most IPv4 carries: %w", MaxDatagram4, netdev.ErrTooBig)
	errXmitTooBig6 = fmt.Errorf("udp: xmit: datagram longer than %d bytes, the most IPv6 carries: %w", MaxDatagram6, netdev.ErrTooBig)
	// As errors (interfaces) already: returned, an opError would be
	// copied to the heap on every drop.
	errXmitNoDst     error = opError{"xmit", ErrNoDestination}
	errXmitFamily    error = opError{"xmit", errDstFamily}
	errXmitV6Only    error = opError{"xmit", errDstV6Only}
	errXmitV4Peer    error = opError{"xmit", errDstV4Peer}
	errXmitPort0     error = opError{"xmit", errDstPort0}
	errXmitUnspec    error = opError{"xmit", errDstUnspec}
	errXmitSrc       error = opError{"xmit", ErrSource}
	errXmitGSO             = fmt.Errorf("udp: xmit: GSO type other than UDP_L4 (a UDP socket segments UDP datagrams only): %w", errors.ErrUnsupported)
	errXmitClosed          = fmt.Errorf("udp: xmit: %w", ErrClosed)
	errPollClosed          = fmt.Errorf("udp: poll: %w", ErrClosed)
	errFlushClosed         = fmt.Errorf("udp: flush: %w", ErrClosed)
	errCloseClosed         = fmt.Errorf("udp: close: %w", ErrClosed)
	errSetDstClosed        = fmt.Errorf("udp: set destination: %w", ErrClosed)
	errWaitClosed          = fmt.Errorf("udp: wait: %w", ErrClosed)
	errPendingClosed       = fmt.Errorf("udp: pending error: %w", ErrClosed)
	errSendClosed          = fmt.Errorf("udp: sendmmsg: %w", ErrClosed)
)

// Why an address is no destination (badDst).
var (
	errDstFamily = fmt.Errorf("%w: an IPv6 address on an IPv4 socket", ErrNoDestination)
	errDstV6Only = fmt.Errorf("%w: an IPv4 address on an IPv6-only socket (bound or connected to an IPv6 address)", ErrNoDestination)
	errDstV4Peer = fmt.Errorf("%w: an IPv6 address on a socket connected to an IPv4 peer", ErrNoDestination)
	errDstPort0  = fmt.Errorf("%w: port 0", ErrNoDestination)
	errDstUnspec = fmt.Errorf("%w: the unspecified address", ErrNoDestination)
)

// badDst returns, for an address the socket cannot send to, why (an error
// wrapping ErrNoDestination) and XmitTo's error for it, prefixed "udp:
// xmit: "; nil, nil for one it can.
func (d *Device) badDst(dst netip.AddrPort) (why, xmit error) {
	a := dst.Addr()
	switch {
	case !a.IsValid():
		return ErrNoDestination, errXmitNoDst
	case d.family == unix.AF_INET && !a.Unmap().Is4():
		return errDstFamily, errXmitFamily
	case d.family == unix.AF_INET6 && !d.dualStack && a.Unmap().Is4():
		// The kernel would refuse it at the doorbell (ENETUNREACH).
		return errDstV6Only, errXmitV6Only
	case d.connected && d.remoteSrc.Addr().Is4() && !a.Unmap().Is4():
		// A dual-stack socket connected to an IPv4-mapped peer sends
		// IPv4 only: the kernel would refuse it (EAFNOSUPPORT).
		return errDstV4Peer, errXmitV4Peer
	case dst.Port() == 0:
		return errDstPort0, errXmitPort0
	case a.Unmap().IsUnspecified():
		return errDstUnspec, errXmitUnspec
	}
	return nil, nil
}

// opError is one of the package's errors met in operation op: it reads
// "udp: op: " and the error's text without its own "udp: ", and unwraps to
// it.
type opError struct {
	op  string
	err error
}

func (e opError) Error() string {
	return "udp: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "udp: ")
}

func (e opError) Unwrap() error { return e.err }

// Xmit queues b, one UDP datagram whose payload is b's data (linear data,
// frags and frag list, gathered with iovecs and not copied, except that the
// datagrams of a GSO run shorter than 256 bytes are copied into one staging
// buffer, and that a buffer in more than 1024 pieces, UIO_MAXIOV, is
// linearized first), and rings the
// doorbell, one system call for the queue (sendto(2) for a datagram
// alone, sendmsg(2) or sendmmsg(2) otherwise), when more is false or the
// queue is full (ndo_start_xmit with xmit_more). On a connected device the
// datagram goes to Remote; on an unconnected one to the destination last set
// with SetDst (XmitTo names one per datagram).
//
// A GSO super-packet (b.GSOSize set, b.GSOType skb.GSOUDPL4) is a train of
// datagrams of GSOSize bytes each, the last possibly shorter: it is sent as
// UDP_SEGMENT messages of up to MaxGSOSegments datagrams with GSO on, and cut
// into datagrams by the driver with it off. With GSO on, the doorbell also
// sends a run of queued datagrams of equal size (the last may be shorter) to
// one destination as one UDP_SEGMENT message.
//
// Xmit takes ownership of b, also when it returns an error: after the
// doorbell b is freed into the device's Cache, without a clone (seed 000),
// whether it was sent or dropped. It returns an error wrapping
// netdev.ErrTooBig for a datagram longer than MaxDatagram4 (IPv4) or
// MaxDatagram6 (counted in tx_dropped_too_big), one wrapping
// errors.ErrUnsupported for a GSO super-packet of another type than
// skb.GSOUDPL4 (tx_dropped_error, each of its segments),
// ErrNoDestination, ErrClosed (after Close: b freed and counted in
// tx_dropped_closed; also from a doorbell that Close, called from another
// goroutine, shut the socket down under, its unsent datagrams counted in
// tx_dropped_closed), or the doorbell's error
// (prefixed "udp: sendmmsg: ", the errno kept): the datagrams it could not
// send were dropped and counted in tx_dropped_<reason>. An error rings the
// doorbell for what was queued before it. It allocates nothing, except for
// an error other than these.
//
// On a connected device an ICMP error for an earlier datagram (a port
// unreachable: nobody listens at Remote) is the socket's pending error,
// which the kernel reports on the next send (ECONNREFUSED, "udp: sendmmsg:
// connection refused") instead of sending that call's first message: its
// datagrams (one, or with GSO up to 64 sent as one UDP_SEGMENT message) are
// dropped and counted in tx_dropped_error, and the next doorbell sends
// again.
func (d *Device) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("udp", b)
	}
	if !d.enter() {
		b.Free()
		d.ctr.TxDrop(netdev.DropClosed, 1)
		return errXmitClosed
	}
	defer d.exit() // also when a caller's misuse panics below
	name := d.dst[:d.dstLen]
	if !more && d.sendsAlone(b, name) {
		// The doorbell of one datagram, rung from here (see sentOne).
		e := mmsg.SendtoNow(d.fd, b.Data(), namePtr(name), len(name))
		return d.sentOne(b, name, e)
	}
	return d.queue(b, name, netip.Addr{}, more)
}

// XmitTo is Xmit to the destination dst, for an unconnected device sending
// to many peers or ports (the flows of a packet generator): dst applies to b
// alone. It returns ErrNoDestination, dropping b, for the zero AddrPort,
// port 0, the unspecified address (which the kernel takes as this host) or
// an address of the other family than a socket that is not dual-stack
// sends to (an IPv6 address on an IPv4 socket or on one connected to an
// IPv4-mapped peer, an IPv4 one on a socket bound or connected to an IPv6
// address that is not IPv4-mapped). An IPv6 dst may carry a zone (the
// interface of a link-local address). On a connected device, dst equal to
// the connected peer (IPv4 as such or IPv4-mapped) is sent as Xmit sends,
// without an address: the kernel then uses the socket's cached route
// rather than looking the route and the source address up for each
// datagram (8% of a datagram's cost at burst 1 on loopback). XmitTo
// takes ownership of b, also when it returns an error. It allocates
// nothing.
func (d *Device) XmitTo(b *skb.Buff, dst netip.AddrPort, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("udp", b)
	}
	if !d.enter() {
		b.Free()
		d.ctr.TxDrop(netdev.DropClosed, 1)
		return errXmitClosed
	}
	defer d.exit()
	t := &d.tx
	if dst != t.lastDst || t.lastN == 0 {
		if _, err := d.badDst(dst); err != nil {
			return d.dropOne(b, netdev.DropError, err)
		}
		t.lastN = mmsg.PutSockaddr(t.lastName[:], d.family, dst)
		t.lastDst = dst
		t.lastPeer = d.connected && (dst == d.remote || netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port()) == d.remoteSrc)
	}
	name := t.lastName[:t.lastN]
	if t.lastPeer {
		name = name[:0]
	}
	if !more && d.sendsAlone(b, name) {
		// The doorbell of one datagram, rung from here (see sentOne), in
		// XmitTo's own frame for the reason Poll makes its own probe.
		e := mmsg.SendtoNow(d.fd, b.Data(), namePtr(name), len(name))
		return d.sentOne(b, name, e)
	}
	return d.queue(b, name, netip.Addr{}, more)
}

// XmitFrom is XmitTo from the source address src, a unicast address of
// this host: the datagram carries src as its source (an IP_PKTINFO control
// message, ipi_spec_dst, for an IPv4 destination; IPV6_PKTINFO, ipi6_addr,
// for an IPv6 one; ip(7), ipv6(7)), instead of the address the route
// picks. An echo server bound to the unspecified address answers each
// request from the address it came to, DstAddr (Config.PktInfo), so that a
// client connected to that address accepts the answer. The zero Addr or
// the unspecified address leaves the choice to the route, as XmitTo.
//
// Datagrams with a source are sent with sendmmsg(2) (a doorbell of one
// with sendmsg(2), not sendto(2)), and a GSO run takes only datagrams with
// the same source. The interface index sent is 0 and src's zone is not
// used: the route picks the interface, so a link-local source is refused
// (EINVAL).
//
// XmitFrom takes ownership of b, also when it returns an error. It drops b
// and returns ErrNoDestination as XmitTo does, and ErrSource for a source
// of another family than dst, or a multicast or limited-broadcast
// (255.255.255.255) one. A source that is not an address of this host is
// refused by the kernel at the doorbell (EINVAL; ENETUNREACH from an IPv4
// route lookup): that datagram is dropped and counted in tx_dropped_error,
// and the rest of the batch is sent. A GSO message with a source refused
// with EINVAL is sent again datagram by datagram: when the first goes, the
// segmentation was at fault and GSO is turned off (gso_fallback_einval);
// when it is refused too, the source was, and GSO stays on. It allocates
// nothing.
func (d *Device) XmitFrom(b *skb.Buff, src netip.Addr, dst netip.AddrPort, more bool) error {
	if !src.IsValid() || src.Unmap().IsUnspecified() {
		return d.XmitTo(b, dst, more)
	}
	// XmitTo's checks, repeated rather than shared: XmitTo makes its lone
	// sendto from its own frame, with no call of a shared body around it.
	if b == nil || !b.IsLive() {
		netdev.BadXmit("udp", b)
	}
	if !d.enter() {
		b.Free()
		d.ctr.TxDrop(netdev.DropClosed, 1)
		return errXmitClosed
	}
	defer d.exit()
	if _, err := d.badDst(dst); err != nil {
		return d.dropOne(b, netdev.DropError, err)
	}
	var name [mmsg.SockaddrMax]byte
	n := mmsg.PutSockaddr(name[:], d.family, dst)
	if src.Unmap().Is4() != dst.Addr().Unmap().Is4() || src.IsMulticast() || src.Unmap() == limitedBroadcast {
		return d.dropOne(b, netdev.DropError, errXmitSrc)
	}
	return d.queue(b, name[:n], src, more)
}

// limitedBroadcast is 255.255.255.255, which the kernel refuses as a source.
var limitedBroadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// Flush rings the doorbell now for whatever Xmit queued. It returns the
// doorbell's error (the unsent datagrams were dropped and counted), or
// ErrClosed.
func (d *Device) Flush() error {
	if !d.enter() {
		return errFlushClosed
	}
	defer d.exit()
	if b, name := d.queuedAlone(); b != nil {
		// The doorbell of one datagram, rung from here (see sentOne).
		e := mmsg.SendtoNow(d.fd, b.Data(), namePtr(name), len(name))
		return d.sentOne(b, name, e)
	}
	return d.doorbell()
}

// queuedAlone takes the queue's only packet off it when it is one linear
// datagram, which one sendto sends (cheaper in the kernel than a sendmmsg
// of one message, and no batch to lay out), and returns it with its
// destination (empty for the connected peer), which stays valid until the
// next Xmit; the caller then owns the buffer and must send or free it
// (sentOne does both). Otherwise it returns nil and leaves the queue alone.
func (d *Device) queuedAlone() (*skb.Buff, []byte) {
	t := &d.tx
	if t.n != 1 {
		return nil, nil
	}
	e := &t.pkts[0]
	if e.gso != 0 || e.niov != 1 || e.from != 0 || e.b.IsNonlinear() {
		return nil, nil
	}
	b := e.b
	e.b, t.n = nil, 0
	return b, t.names[0][:e.name]
}

// TxAvail returns how many more packets Xmit can queue before the doorbell
// rings because the queue is full.
func (d *Device) TxAvail() int {
	if d.closing() {
		return 0
	}
	return len(d.tx.pkts) - d.tx.n
}

// queue is Xmit after the closed check: name is the datagram's destination
// as a struct sockaddr, empty for the connected peer; src is its source,
// the zero Addr for the route's choice.
func (d *Device) queue(b *skb.Buff, name []byte, src netip.Addr, more bool) error {
	t := &d.tx
	n := b.Len()
	niov, gso := 1, 0
	if b.IsGSO() {
		if b.GSOType()&skb.GSOUDPL4 == 0 {
			return d.dropOne(b, netdev.DropError, errXmitGSO)
		}
		if g := b.GSOSize(); n > g {
			if g > d.maxTo(name) {
				return d.dropOne(b, netdev.DropTooBig, d.tooBig(name))
			}
			gso = g
		}
	}
	if gso == 0 && n > d.maxTo(name) {
		return d.dropOne(b, netdev.DropTooBig, d.tooBig(name))
	}
	if b.IsNonlinear() {
		niov = countIov(b)
		if niov > maxIovPerMsg {
			if err := b.Linearize(d.cache); err != nil {
				return d.dropOne(b, netdev.DropNoBuffer, errXmitNoBuf)
			}
			niov = 1
		}
	} else if n == 0 {
		niov = 0
	}
	k := t.n
	if len(name) == 0 && !d.connected {
		return d.dropOne(b, netdev.DropError, errXmitNoDst)
	}
	if len(name) > 0 {
		t.names[k] = [mmsg.SockaddrMax]byte{}
		copy(t.names[k][:], name)
	}
	// Field by field: a struct built on the stack and copied in stalls on
	// store forwarding, measurably so at millions of packets a second.
	e := &t.pkts[k]
	e.b = b
	e.n = int32(n)
	e.niov = int32(niov)
	e.gso = uint16(gso)
	e.name = uint8(len(name))
	e.from = 0
	if src.IsValid() {
		o := k * mmsg.PktinfoSpace
		e.from = uint8(mmsg.PutCmsgPktinfo(t.froms[o:o+mmsg.PktinfoSpace], src))
	}
	t.n = k + 1
	if !more || t.n == len(t.pkts) {
		return d.doorbell()
	}
	return nil
}

var errXmitNoBuf = fmt.Errorf("udp: xmit: linearize: %w", pool.ErrExhausted)

// sendOne is the doorbell of a queue holding the one linear datagram b, to
// name (empty for the connected peer): one sendto(2), first without
// sleeping and outside the scheduler's view as send does, then, when the
// send buffer is full and the device may wait, once more as a call that
// sleeps. It frees b and counts the datagram as the doorbell would.
func (d *Device) sendOne(b *skb.Buff, name []byte) error {
	e := mmsg.SendtoNow(d.fd, b.Data(), namePtr(name), len(name))
	return d.sentOne(b, name, e)
}

// sentOne finishes sendOne after its first sendto returned errno e: it
// retries after EINTR, waits for room when the device may, frees b and
// counts the datagram. Xmit, XmitTo and Flush make that first call
// themselves when they send one datagram, for the reason Poll makes its
// own probe.
func (d *Device) sentOne(b *skb.Buff, name []byte, e unix.Errno) error {
	n := b.Len()
	for e == unix.EINTR {
		e = mmsg.SendtoNow(d.fd, b.Data(), namePtr(name), len(name))
	}
	var err error
	if e != 0 {
		err = e
	}
	if e == unix.EAGAIN && d.sendFlags&unix.MSG_DONTWAIT == 0 {
		_, err = mmsg.Sendto(d.fd, b.Data(), d.sendFlags, name)
		for err == unix.EINTR {
			_, err = mmsg.Sendto(d.fd, b.Data(), d.sendFlags, name)
		}
	}
	d.cache.Free(b)
	if err == nil {
		d.ctr.TxDoorbell(1, n)
		return nil
	}
	if d.closing() {
		// Shut down under this send by Close from another goroutine.
		d.ctr.TxDrop(netdev.DropClosed, 1)
		return errSendClosed
	}
	r := netdev.DropError
	switch err {
	case unix.EMSGSIZE:
		r = netdev.DropTooBig
	case unix.EAGAIN:
		r = netdev.DropRingFull
		d.ctr.TxRingFull()
	case unix.ENOBUFS:
		r = netdev.DropNoBuffer
	}
	d.ctr.TxDrop(r, 1)
	return d.sendErr(err)
}

// sendsAlone reports whether Xmit of b to name (empty for the connected
// peer) with more false may send it at once with one sendto: nothing is
// queued, and b is one linear, non-empty datagram that fits, with a
// destination. Anything else goes through the queue and the doorbell.
func (d *Device) sendsAlone(b *skb.Buff, name []byte) bool {
	n := b.Len()
	return d.tx.n == 0 && n > 0 && n <= d.maxTo(name) && !b.IsNonlinear() && !b.IsGSO() &&
		(len(name) > 0 || d.connected)
}

// maxTo returns the largest datagram, in bytes, to the destination name (a
// struct sockaddr; empty for the connected peer): MaxDatagram4 to an IPv4
// destination, which on a dual-stack socket is an IPv4-mapped
// sockaddr_in6, MaxDatagram6 to an IPv6 one.
func (d *Device) maxTo(name []byte) int {
	if d.dualStack && len(name) >= unix.SizeofSockaddrInet6 &&
		netip.AddrFrom16([16]byte(name[8:24])).Is4In6() {
		return MaxDatagram4
	}
	return d.maxDgram
}

// tooBig returns the error of a datagram longer than maxTo(name).
func (d *Device) tooBig(name []byte) error {
	if d.maxTo(name) == MaxDatagram4 {
		return errXmitTooBig4
	}
	return errXmitTooBig6
}

// dropOne drops b before it was queued, counts it, rings the doorbell for
// what was queued before (an error path must not strand them) and returns
// err, or the doorbell's error when err is nil.
func (d *Device) dropOne(b *skb.Buff, r netdev.DropReason, err error) error {
	segs := 1
	if g := b.GSOSize(); g > 0 && b.Len() > g {
		segs = (b.Len() + g - 1) / g
	}
	d.ctr.TxDrop(r, segs)
	d.cache.Free(b)
	if e := d.doorbell(); err == nil {
		err = e
	}
	return err
}

// countIov returns the iovecs b's data needs: one for the linear data, one
// per frag, and the frag list members' own.
func countIov(b *skb.Buff) int {
	n := b.NrFrags()
	if b.HeadLen() > 0 {
		n++
	}
	for c := b.FragList(); c != nil; c = c.Next() {
		n += countIov(c)
	}
	return n
}

// appendIov appends iovecs covering bytes [off, off+n) of b's data, linear
// data first, then the frags, then the frag list (skb_copy_bits' order).
// It returns the extended slice and the bytes still to cover.
func appendIov(iov []unix.Iovec, b *skb.Buff, off, n int) ([]unix.Iovec, int) {
	if n <= 0 {
		return iov, 0
	}
	if d := b.Data(); off < len(d) {
		k := min(n, len(d)-off)
		iov = append(iov, iovec(d[off:off+k]))
		n -= k
		off = 0
	} else {
		off -= len(d)
	}
	for _, f := range b.Frags() {
		if n == 0 {
			return iov, 0
		}
		fb := f.Bytes()
		if off >= len(fb) {
			off -= len(fb)
			continue
		}
		k := min(n, len(fb)-off)
		iov = append(iov, iovec(fb[off:off+k]))
		n -= k
		off = 0
	}
	for c := b.FragList(); c != nil && n > 0; c = c.Next() {
		if l := c.Len(); off >= l {
			off -= l
			continue
		}
		iov, n = appendIov(iov, c, off, n)
		off = 0
	}
	return iov, n
}

// appendAll appends the iovecs of all of p's data: one for a linear packet,
// the fast path.
func appendAll(iov []unix.Iovec, p *txPkt) []unix.Iovec {
	if p.niov == 1 && !p.b.IsNonlinear() {
		return append(iov, iovec(p.b.Data()))
	}
	iov, _ = appendIov(iov, p.b, 0, int(p.n))
	return iov
}

func iovec(p []byte) unix.Iovec {
	v := unix.Iovec{Base: &p[0]}
	v.SetLen(len(p))
	return v
}

// doorbell sends everything queued, in rounds of at most len(hdrs)
// messages, retrying the unsent tail after a short sendmmsg, and frees every
// queued buffer into the cache. It returns the first error; what it could
// not send is dropped and counted.
func (d *Device) doorbell() error {
	t := &d.tx
	if t.n == 0 {
		return nil
	}
	if b, name := d.queuedAlone(); b != nil {
		// One linear datagram (a queue that filled up to one, or an
		// answer flushed after its Poll).
		return d.sendOne(b, name)
	}
	var first error
	pos := txPos{}
	for pos.pkt < t.n {
		start := pos
		m := d.build(&pos)
		if m == 0 {
			// Cannot happen: an empty round always takes one message.
			panic(fmt.Sprintf("udp: doorbell built no message at packet %d of %d", start.pkt, t.n))
		}
		i := 0
	send:
		for i < m {
			k, err := d.send(i, m)
			if d.gsoSuspect && err != unix.EINTR {
				d.settleGSO(err)
			}
			if err == nil {
				segs, bytes := 0, 0
				for _, msg := range t.msgs[i : i+k] {
					segs += int(msg.segs)
					bytes += int(msg.bytes)
				}
				d.ctr.TxDoorbell(segs, bytes)
				i += k
				continue
			}
			msg := &t.msgs[i]
			switch {
			case err == unix.EINTR:
				continue
			case d.closing():
				// Close from another goroutine shut the socket down
				// under this send (EPIPE): what is left is dropped as
				// closed, and the error says so.
				d.ctr.TxDrop(netdev.DropClosed, d.segsFrom(txPos{int(msg.pkt), int(msg.off)}))
				first = errSendClosed // over an earlier datagram's error: the device is gone
				pos = txPos{t.n, 0}
				break send
			case msg.gso && (err == unix.EINVAL || err == unix.EMSGSIZE):
				// The segmentation (SO_NO_CHECK set through Fd, a
				// segment over the MTU), or what a plain send would
				// meet as well (a source not of this host, a route
				// refused, a datagram too big): send the same datagrams
				// plainly, and let the first of them tell (settleGSO).
				d.gso, d.gsoSuspect, d.gsoReason = false, true, gsoReason(err)
				pos = txPos{int(msg.pkt), int(msg.off)}
				break send
			case msg.gso && err == unix.EIO:
				// The socket cannot segment (no checksum offload on
				// the route, xfrm): turn GSO off for good and send the
				// same datagrams again, plainly.
				d.gso = false
				d.ctr.GSOFallback(netdev.FallbackEIO)
				pos = txPos{int(msg.pkt), int(msg.off)}
				break send
			case err == unix.EMSGSIZE:
				d.ctr.TxDrop(netdev.DropTooBig, int(msg.segs))
				first = d.keepFirst(first, err)
				i++
			case perMessage(err):
				d.ctr.TxDrop(netdev.DropError, int(msg.segs))
				first = d.keepFirst(first, err)
				i++
			default:
				// EAGAIN (no room within TxTimeout), ENOBUFS, or the
				// socket is gone: drop everything not yet sent.
				r := netdev.DropError
				switch err {
				case unix.EAGAIN:
					r = netdev.DropRingFull
					d.ctr.TxRingFull()
				case unix.ENOBUFS:
					r = netdev.DropNoBuffer
				}
				d.ctr.TxDrop(r, d.segsFrom(txPos{int(msg.pkt), int(msg.off)}))
				first = d.keepFirst(first, err)
				pos = txPos{t.n, 0}
				break send
			}
		}
	}
	if d.gsoSuspect {
		// Nothing was sent after the suspect message: blame nothing.
		d.gso, d.gsoSuspect = true, false
	}
	for i := range t.pkts[:t.n] {
		d.cache.Free(t.pkts[i].b)
		t.pkts[i].b = nil
	}
	t.n = 0
	return first
}

// settleGSO decides, from err, the result of sending plainly the first
// datagram of a GSO message that was refused with EINVAL or EMSGSIZE:
// sent, the segmentation was at fault, and GSO stays off, counted as a
// fallback of that reason; refused again (or failed otherwise), the
// datagram was (its source, its route, its size), or nothing is known,
// and GSO is on again for the next doorbell.
func (d *Device) settleGSO(err error) {
	d.gsoSuspect = false
	if err == nil {
		d.ctr.GSOFallback(d.gsoReason)
		return
	}
	d.gso = true
}

func (d *Device) keepFirst(first, err error) error {
	if first != nil {
		return first
	}
	return d.sendErr(err)
}

// sendErr wraps the errno of a send. EINVAL from a socket bound to a
// loopback address says why: the kernel routes from such an address to
// this host's own addresses only (ip_route_output_key_hash_rcu), so a
// datagram to another host is refused.
func (d *Device) sendErr(err error) error {
	if err == unix.EINVAL && d.local.Addr().IsLoopback() {
		return fmt.Errorf("udp: sendmmsg: %w (the socket is bound to %v, a loopback address, which reaches this host's own addresses only)", err, d.local.Addr())
	}
	return fmt.Errorf("udp: sendmmsg: %w", err)
}

// gsoReason is the fallback reason of err from a UDP_SEGMENT send that the
// socket or its route could not segment (udp_send_skb: EIO through xfrm,
// and on older kernels without checksum offload on the device; EINVAL for
// too many segments or SO_NO_CHECK; EMSGSIZE for a segment over the MTU).
func gsoReason(err error) netdev.FallbackReason {
	switch err {
	case unix.EIO:
		return netdev.FallbackEIO
	case unix.EINVAL:
		return netdev.FallbackEINVAL
	}
	return netdev.FallbackEMSGSIZE
}

// perMessage reports whether err concerns the one message that failed (its
// destination or size), so that the rest of the batch is still sent.
func perMessage(err error) bool {
	switch err {
	case unix.ECONNREFUSED, unix.EPERM, unix.EACCES, unix.EHOSTUNREACH, unix.ENETUNREACH,
		unix.EHOSTDOWN, unix.ENETDOWN, unix.EINVAL, unix.EAFNOSUPPORT, unix.EDESTADDRREQ,
		unix.EADDRNOTAVAIL:
		return true
	}
	return false
}

// segsFrom returns the datagrams queued from pos on.
func (d *Device) segsFrom(pos txPos) int {
	t := &d.tx
	segs := 0
	for j := pos.pkt; j < t.n; j++ {
		p := &t.pkts[j]
		if p.gso == 0 {
			segs++
			continue
		}
		rem := int(p.n)
		if j == pos.pkt {
			rem -= pos.off
		}
		segs += (rem + int(p.gso) - 1) / int(p.gso)
	}
	return segs
}

// build lays out the next round of messages from pos, advancing pos past
// them, and returns how many it made (at least one while packets remain).
func (d *Device) build(pos *txPos) int {
	t := &d.tx
	m, niov, stage := 0, 0, 0
	for pos.pkt < t.n && m < len(t.hdrs) {
		p := &t.pkts[pos.pkt]
		if niov+int(p.niov) > len(t.iov) {
			break
		}
		msg := &t.msgs[m]
		*msg = txMsg{pkt: int32(pos.pkt), off: int32(pos.off)}
		h := &t.hdrs[m].Hdr
		iv := t.iov[niov:niov]
		first := pos.pkt
		gsoSize := 0
		if p.gso == 0 {
			iv = appendAll(iv, p)
			msg.segs, msg.bytes = 1, p.n
			j := pos.pkt + 1
			if d.gso && p.n > 0 {
				// A run of datagrams of p's size to p's destination, the
				// last possibly shorter, within the kernel's limits.
				for j < t.n && msg.segs < MaxGSOSegments {
					q := &t.pkts[j]
					if q.gso != 0 || q.n > p.n || q.n == 0 || int(msg.bytes+q.n) > d.maxGSO ||
						len(iv)+int(q.niov) > maxIovPerMsg || niov+len(iv)+int(q.niov) > len(t.iov) ||
						q.name != p.name || p.name != 0 && t.names[j] != t.names[first] ||
						q.from != p.from || p.from != 0 && string(t.from(j)) != string(t.from(first)) {
						break
					}
					iv = appendAll(iv, q)
					msg.segs++
					msg.bytes += q.n
					j++
					if q.n < p.n {
						break
					}
				}
			}
			if msg.segs > 1 {
				gsoSize = int(p.n)
				if gsoSize < stageBelow && stage+int(msg.bytes) <= len(t.stage) {
					// Small datagrams: one copy into the staging buffer
					// costs less than an iovec each in the kernel.
					iv = iv[:0]
					s0 := stage
					for k := first; k < j; k++ {
						stage += stageCopy(t.stage[stage:], &t.pkts[k])
					}
					iv = append(iv, iovec(t.stage[s0:stage]))
				}
			} else {
				msg.simple = p.niov == 1 && p.from == 0 && !p.b.IsNonlinear()
			}
			pos.pkt, pos.off = j, 0
		} else {
			// A super-packet: up to MaxGSOSegments of its segments per
			// message with GSO, one without.
			g := int(p.gso)
			per := 1
			if d.gso {
				per = min(MaxGSOSegments, d.maxGSO/g)
			}
			l := min(per*g, int(p.n)-pos.off)
			iv, _ = appendIov(iv, p.b, pos.off, l)
			msg.segs = int32((l + g - 1) / g)
			msg.bytes = int32(l)
			if msg.segs > 1 {
				gsoSize = g
			}
			pos.off += l
			if pos.off >= int(p.n) {
				pos.pkt, pos.off = pos.pkt+1, 0
			}
		}
		mmsg.SetIov(h, iv)
		niov += len(iv)
		mmsg.SetName(h, t.names[first][:p.name])
		if gsoSize > 0 || p.from != 0 {
			c := t.ctrl[m*ctrlSlot : (m+1)*ctrlSlot]
			k := 0
			if gsoSize > 0 {
				k = mmsg.PutCmsgUint16(c, unix.SOL_UDP, unix.UDP_SEGMENT, uint16(gsoSize))
				msg.gso = true
			}
			if p.from != 0 {
				k += copy(c[k:], t.from(first))
				msg.from = true
			}
			mmsg.SetCtrl(h, c[:k])
		} else {
			mmsg.SetCtrl(h, nil)
		}
		m++
	}
	return m
}

// send sends messages [i, m) of the round and returns how many the kernel
// took. A round of one plain datagram goes by sendto(2), and one of another
// message (a GSO message, gathered pieces, a source) by sendmsg(2), which
// spares the kernel the struct mmsghdr a sendmmsg of one copies in and out
// (no gain measured beyond noise: a 64-datagram GSO burst into C's
// udp_recv, six interleaved rounds).
//
// The call is made first with MSG_DONTWAIT as a raw system call: on loopback
// the whole receive path runs inside the sender's call, so a batch keeps it
// in the kernel for tens of microseconds, and a call the Go scheduler knows
// about would have its P taken away for that (when no other P is idle) and
// have to win one back. Only when the socket's send buffer is full, and the
// device may wait (TxTimeout not negative), is the call made again as one
// that may sleep.
func (d *Device) send(i, m int) (int, error) {
	k, err := d.sendNow(i, m)
	if err == unix.EAGAIN && d.sendFlags&unix.MSG_DONTWAIT == 0 {
		k, err = d.sendWait(i, m)
	}
	return k, err
}

func (d *Device) sendNow(i, m int) (int, error) {
	t := &d.tx
	if m-i == 1 && t.msgs[i].simple {
		j := t.msgs[i].pkt
		p := &t.pkts[j]
		if e := mmsg.SendtoNow(d.fd, p.b.Data(), namePtr(t.names[j][:p.name]), int(p.name)); e != 0 {
			return 0, e
		}
		return 1, nil
	}
	if m-i == 1 {
		if _, e := mmsg.SendmsgNow(d.fd, &t.hdrs[i].Hdr, unix.MSG_DONTWAIT); e != 0 {
			return 0, e
		}
		return 1, nil
	}
	return mmsg.SendHdrsNow(d.fd, t.hdrs[i:m], unix.MSG_DONTWAIT)
}

func (d *Device) sendWait(i, m int) (int, error) {
	t := &d.tx
	if m-i == 1 && t.msgs[i].simple {
		j := t.msgs[i].pkt
		p := &t.pkts[j]
		if _, err := mmsg.Sendto(d.fd, p.b.Data(), d.sendFlags, t.names[j][:p.name]); err != nil {
			return 0, err
		}
		return 1, nil
	}
	if m-i == 1 {
		if _, err := mmsg.Sendmsg(d.fd, &t.hdrs[i].Hdr, d.sendFlags); err != nil {
			return 0, err
		}
		return 1, nil
	}
	return mmsg.SendHdrs(d.fd, t.hdrs[i:m], d.sendFlags)
}

// drop frees every queued packet, counting its datagrams as dropped for r.
func (t *txq) drop(d *Device, r netdev.DropReason) {
	if t.n == 0 {
		return
	}
	d.ctr.TxDrop(r, d.segsFrom(txPos{}))
	for i := range t.pkts[:t.n] {
		d.cache.Free(t.pkts[i].b)
		t.pkts[i].b = nil
	}
	t.n = 0
}

// namePtr is name's first byte for sendto(2), or nil for an empty name: the
// kernel takes a pointer with length 0 as an invalid address (EINVAL), not
// as none.
func namePtr(name []byte) *byte {
	if len(name) == 0 {
		return nil
	}
	return &name[0]
}
