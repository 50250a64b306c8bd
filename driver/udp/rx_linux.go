//go:build linux

package udp

import (
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/mmsg"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// rxCtrlLen is the control buffer of each receive slot with GRO or
// PktInfo: room for the UDP_GRO message (an int, CMSG_SPACE 24 bytes on
// 64-bit Linux), an IPV6_PKTINFO one (40 bytes) and an IP_PKTINFO one (32
// bytes), all three of which an IPv4 datagram on a dual-stack socket with
// PktInfo and GRO gets: 96 bytes. A shorter buffer would cut the last
// message (MSG_CTRUNC). Without GRO or PktInfo the slots have none: the
// kernel then skips its control-message work.
const rxCtrlLen = 96

// rxq is the receive side: one recvmmsg batch whose slots each have a posted
// buffer, and the messages received and not yet handed to the handler.
type rxq struct {
	batch    *mmsg.Batch
	bufs     []*skb.Buff // posted buffer of each slot; nil when the slot needs one
	ctrlLen  int         // control bytes each slot offers the kernel: rxCtrlLen with GRO or PktInfo, else 0
	posted   int         // slots [0, posted) all hold a buffer
	prepared int         // messages [0, prepared) have their pointers set (PrepareRecv)
	dirty    int         // messages [0, dirty) were filled by the kernel since last reset
	recvSize int         // bytes each posted buffer offers the kernel
	maxDgram int         // the longest datagram handed over (Config.RecvSize); a GRO train's segments each

	n, next int        // messages [next, n) are received and pending
	off     int        // bytes of message next already handed over (a GRO train)
	seg     int        // GRO segment size of message next, 0 for one datagram
	cur     int        // slot of the packet last handed over, for Src; -1 for none
	dst     netip.Addr // local address of message next (PktInfo), for DstAddr

	// drained says the receive call that brought the pending messages
	// found the socket's queue empty after them (it got fewer than it asked
	// for): once they are handed over, Poll returns without another call,
	// which would find nothing.
	drained bool

	// sparse says the last batch receive call got at most one datagram
	// (traffic is one packet in flight, or none): Poll then probes with a
	// receive of one datagram, the cheapest call, and returns after it.
	sparse bool

	// waitOne says the last batch receive that slept (Wait) woke with
	// one datagram: the waits after it sleep in a receive of one
	// datagram, all but every waitProbe-th, which asks for a batch
	// again to see whether traffic got denser. waits counts them.
	waitOne bool
	waits   uint32

	calls uint32 // receive calls made, for tickDrops

	slot0 []byte // the room of the buffer posted in slot 0, where a probe receives

	timeo time.Duration // SO_RCVTIMEO now set (Wait); -1 none set
}

func (r *rxq) init(batch, recvSize, maxDgram int, ctrl, names bool) {
	if ctrl {
		r.ctrlLen = rxCtrlLen
	}
	r.batch = mmsg.NewBatch(batch, names, r.ctrlLen)
	r.bufs = make([]*skb.Buff, batch)
	r.recvSize, r.maxDgram = recvSize, maxDgram
	r.cur = -1
	r.timeo = -1
}

// Static errors of the receive path, so that they allocate nothing.
var (
	errPollNoBuf = fmt.Errorf("udp: poll: no receive buffer: %w", pool.ErrExhausted)
	errWaitNoBuf = fmt.Errorf("udp: wait: no receive buffer: %w", pool.ErrExhausted)
)

// Poll receives up to budget datagrams without blocking and hands each to h
// in arrival order, as one buffer holding the UDP payload with the Config's
// headroom in front (napi_poll). It receives with recvmmsg(2) into posted
// buffers from the device's Cache (with recvfrom(2) when it wants one
// datagram, as a busy-polling ping-pong does: the cheapest receive call): a
// datagram shorter than the copybreak threshold is copied into a
// right-sized buffer and the posted one stays posted (seed 001; the
// threshold is cut, at Open, to what the largest size class below the
// receive buffer's holds behind the headroom: no copy where none is
// smaller, as with a RecvSize of 64, since it would save no memory); a GRO
// train is split into one buffer per datagram (copies for segments shorter
// than the copybreak threshold, clones sharing the train's buffer
// otherwise). A datagram longer than the receive buffer (1920 bytes by
// default, 64 KiB trains with GRO: see Config.RecvSize, which a tunnel or
// relay sets to MaxDatagram4 or MaxDatagram6 to take every datagram) is
// dropped (rx_truncated). During h, Src gives the datagram's source.
//
// Poll returns as soon as a receive call got fewer datagrams than it asked
// for, since the socket's queue is then empty: datagrams that Wait received
// in a batch are handed over without another call. So is the one datagram
// a Wait for one received (see Wait), though more may be queued behind it:
// the next Wait takes the next at once. When the last batch
// call got at most one datagram (one packet in flight, as in a ping-pong,
// or a queue polled faster than it fills), Poll probes with a receive of
// one datagram and returns after handing it over, so that an echo server
// answers at once; the next Poll asks for a batch again. Measured on a
// busy-polling loopback ping-pong, an echo server probing with recvmmsg
// for 64 had a p50 0.7 µs longer than one probing for 1 (7.96 against
// 7.27 µs, the C reference 6.62 µs).
//
// A clone shares the train's 68 KiB buffer: its headroom holds the
// segments before it, and it must not be written before CowHead, which
// copies the datagram alone, behind the headroom asked for, into a block of
// its size (Unshare would copy the whole 68 KiB block, as skb_unshare
// does). Buffers handed over are linear.
//
// The handler owns each buffer it is given. Poll returns how many it handed
// over, ErrClosed after Close (also with the count of those handed over
// when the handler, or another goroutine, closed the device during Poll),
// an error wrapping pool.ErrExhausted ("udp: poll: no receive buffer") when
// the pool had no buffer to post for a receive (a bounded pool whose blocks
// are all held: the datagrams wait in the socket, and what overflows it
// the kernel drops and counts in rx_dropped_kernel), or the receive call's
// error prefixed "udp: poll: " (ECONNREFUSED reports an ICMP port
// unreachable for an earlier datagram of a connected device).
// It allocates nothing.
func (d *Device) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("udp: Poll with a nil handler")
	}
	if !d.enterPoll() {
		return 0, errPollClosed
	}
	defer d.exitPoll()
	return d.poll(budget, h, nil)
}

// BusyPoll is Poll that spins until it has something to hand over
// (netdev.BusyPoller; the kernel's napi_busy_loop made from user space, as
// SO_BUSY_POLL does for a blocking read): with nothing received it probes
// the socket with non-blocking recvfrom(2) calls (recvmsg(2) with GRO or
// PktInfo, for the control messages) until a datagram comes, timeout
// passes (a negative timeout spins without limit, zero probes once), or
// the device is closed, then hands over up to budget datagrams as Poll
// does: the handler owns each buffer it is given, and BusyPoll keeps the
// ones it posts. A datagram dropped on the way (too long for the receive buffer,
// rx_truncated) does not end the spin. A budget of 0 or less hands
// nothing over and does not spin. It is
// the receive of a busy-polling ping-pong or echo server (traffic.PingPong
// with BusyPoll, traffic.Echo with Spin), which would otherwise call Poll
// in a loop.
//
// The probes run in rounds of spinTries (32) inside one assembly loop
// (mmsg.RecvfromSpin), with nothing between two system calls, and the
// spin is made where Poll makes its probe, so a datagram found reaches
// the handler by the frames a probe of Poll's takes (BenchmarkExchange: a
// datagram already queued costs BusyPoll what it costs Poll). The clock
// is read, and Close looked at, between rounds only, and the clock only
// once a probe has found nothing (the first round of a positive timeout
// is one probe): a spin that ends for its timeout ends up to a round and
// a probe (12-47 µs) after it, never before. BusyPoll does not need
// Config.BusyPoll, which makes Wait spin the same way and sets
// SO_BUSY_POLL as well (the kernel's own busy poll of a NIC's queue, which
// BusyPoll alone does not ask for).
//
// It returns what Poll returns, and (0, nil) when the timeout passed with
// nothing received; ErrClosed when the device was closed during the spin
// (also by another goroutine: the spin sees it within a round). A nil h
// panics. It allocates nothing.
func (d *Device) BusyPoll(budget int, h netdev.Handler, timeout time.Duration) (int, error) {
	if h == nil {
		panic("udp: BusyPoll with a nil handler")
	}
	if !d.enterPoll() {
		return 0, errPollClosed
	}
	defer d.exitPoll()
	sp := busy{timeout: timeout}
	return d.poll(budget, h, &sp)
}

// busy is the state of BusyPoll's spin: its timeout and, once the first
// round found nothing, its deadline.
type busy struct {
	timeout  time.Duration
	deadline time.Time
}

// tries returns how many probes the next round makes: one when the
// timeout is zero (look once), and for a positive one before its deadline
// is set (the first round, whose end starts the clock); spinTries
// otherwise.
func (b *busy) tries() int {
	if b.timeout == 0 || b.timeout > 0 && b.deadline.IsZero() {
		return 1
	}
	return spinTries
}

// over reports, after a round that found nothing, whether the spin is
// over: at once for a zero timeout, never for a negative one, and for a
// positive one once the clock passes the deadline, which the first such
// round, a single probe, sets (so a datagram already queued costs no
// reading of the clock, and the spin ends at most a round and a probe
// after its timeout).
func (b *busy) over() bool {
	switch {
	case b.timeout == 0:
		return true
	case b.timeout < 0:
		return false
	}
	now := time.Now()
	if b.deadline.IsZero() {
		b.deadline = now.Add(b.timeout)
		return false
	}
	return !now.Before(b.deadline)
}

// poll is Poll's body, for a caller that has entered the device with
// enterPoll; with sp (BusyPoll) a probe that finds nothing before anything
// was handed over spins on, in rounds of sp.tries probes, until sp is
// over. The spin is made where Poll makes its probe, so that a datagram
// the spin finds goes to the handler by the same frames as one a probe of
// Poll's finds.
func (d *Device) poll(budget int, h netdev.Handler, sp *busy) (int, error) {
	r := &d.rx
	done := 0
	for done < budget {
		if d.closing() {
			// Closed by the handler, or from another goroutine.
			return done, errPollClosed
		}
		if r.next < r.n {
			done += d.deliver(budget-done, h)
			if d.closing() {
				// Closed by the handler, or from another goroutine.
				return done, errPollClosed
			}
			if r.next >= r.n && r.drained {
				// Another call would find the queue empty.
				if sp != nil && done == 0 && !sp.over() {
					// BusyPoll, whose datagram was dropped (truncated):
					// spin on for one to hand over.
					continue
				}
				break
			}
			continue
		}
		want := min(budget-done, len(r.bufs))
		if want == 1 || r.sparse {
			var ok bool
			var e unix.Errno
			if r.ctrlLen > 0 {
				// GRO or PktInfo: a recvmsg, for the control message.
				ok, e = d.recvOne(unix.MSG_DONTWAIT)
				if sp != nil && done == 0 {
					for i := sp.tries(); i > 1 && !ok && e == unix.EAGAIN; i-- {
						ok, e = d.recvOne(unix.MSG_DONTWAIT)
					}
				}
			} else {
				// recvOne's probe, made from here: after a system call
				// every frame around it costs a mispredicted return (see
				// mmsg.RecvfromNow), and a busy-polling caller probes an
				// empty socket millions of times a second. EINTR (not
				// expected of a call that cannot sleep) counts as
				// EAGAIN: the caller polls again.
				p, name, namelen := d.probeSlot()
				if p == nil {
					return done, errPollNoBuf
				}
				var n int
				if sp != nil && done == 0 {
					var calls int
					n, e, calls = mmsg.RecvfromSpin(d.fd, p, name, namelen, sp.tries())
					d.tickDropsN(calls)
				} else {
					n, e = mmsg.RecvfromNow(d.fd, p, name, namelen)
					d.tickDrops()
				}
				switch e {
				case 0:
					ok = d.probedOne(n, len(p))
				case unix.EINTR:
					e = unix.EAGAIN
				}
			}
			switch {
			case ok:
				// One in flight: hand it over and return (the caller
				// answers it); the next call asks for a batch.
				r.drained, r.sparse = true, false
			case e == unix.EAGAIN:
				if sp != nil && done == 0 && !sp.over() {
					// BusyPoll: spin on (Close is looked at first).
					continue
				}
				return done, nil
			case e == 0:
				return done, errPollNoBuf
			default:
				return done, d.rxError(e)
			}
		} else if _, err := d.recv(want, unix.MSG_DONTWAIT); err != nil {
			if err == unix.EAGAIN {
				if sp != nil && done == 0 && !sp.over() {
					// BusyPoll: the queue is empty; spin with probes
					// of one (recv marked the device sparse).
					continue
				}
				break
			}
			return done, d.rxError(err)
		}
		if d.closing() {
			d.rx.discard(d)
			return done, errPollClosed
		}
	}
	return done, nil
}

// rxError wraps a receive error, allocating only for the unusual ones.
func (d *Device) rxError(err error) error {
	if err == errPollNoBuf {
		return err
	}
	return fmt.Errorf("udp: poll: %w", err)
}

// recv posts buffers in slots [0, n) and receives into them with one
// recvmmsg; the messages become pending. A call with MSG_DONTWAIT goes
// as a raw system call (it cannot sleep); MSG_WAITFORONE without it sleeps
// until the first datagram and takes what else is queued. With KeepP a
// call that sleeps goes raw too, and returns EINTR to sleep, which
// must let the runtime preempt it before it calls again.
func (d *Device) recv(n, flags int) (int, error) {
	r := &d.rx
	if n = d.post(n); n == 0 {
		return 0, errPollNoBuf
	}
	var k int
	var err error
	for {
		switch {
		case flags&unix.MSG_DONTWAIT != 0:
			k, err = mmsg.RecvmmsgNow(d.fd, r.batch, n, flags)
		case d.keepP:
			k, err = mmsg.RecvmmsgHeld(d.fd, r.batch, n, flags)
		default:
			k, err = mmsg.Recvmmsg(d.fd, r.batch, n, flags)
		}
		if err != unix.EINTR || d.keepP && flags&unix.MSG_DONTWAIT == 0 {
			break
		}
	}
	d.tickDrops()
	if err != nil {
		r.sparse = true
		return 0, err
	}
	r.n, r.next, r.off, r.dirty = k, 0, 0, k
	r.drained = k < n
	r.sparse = k <= 1
	return k, nil
}

// recvOne receives one datagram into slot 0, which makes it pending: with
// recvmsg(2), or without GRO or PktInfo and without sleeping with
// recvfrom(2) as a raw system call, the cheapest receive the kernel has (no
// msghdr to copy in, no iovec array), which a busy-polling loop probes
// with. On a connected socket it asks for no address: the source can only
// be Remote. It returns whether a datagram came and the call's errno (0
// when one came); ok false with errno 0 means that the pool had no buffer
// to post. The errno is not made an error here: a busy-polling Poll probes
// an empty socket millions of times a second, and compares it with EAGAIN
// as an integer.
// (Poll makes the recvfrom probe itself, with probeSlot and probedOne.)
func (d *Device) recvOne(flags int) (ok bool, e unix.Errno) {
	if flags&unix.MSG_DONTWAIT != 0 && d.rx.ctrlLen == 0 {
		p, name, namelen := d.probeSlot()
		if p == nil {
			return false, 0
		}
		n, e := mmsg.RecvfromNow(d.fd, p, name, namelen)
		for e == unix.EINTR {
			n, e = mmsg.RecvfromNow(d.fd, p, name, namelen)
		}
		d.tickDrops()
		if e != 0 {
			return false, e
		}
		return d.probedOne(n, len(p)), 0
	}
	r := &d.rx
	if d.post(1) == 0 {
		return false, 0
	}
	h := &r.batch.Hdrs[0]
	var n int
	for {
		if flags&unix.MSG_DONTWAIT != 0 {
			n, e = mmsg.RecvmsgNow(d.fd, &h.Hdr, flags)
		} else {
			n, e = mmsg.Recvmsg(d.fd, &h.Hdr, flags)
		}
		if e != unix.EINTR {
			break
		}
	}
	d.tickDrops()
	if e != 0 {
		return false, e
	}
	d.pendOne(n)
	return true, 0
}

// probeSlot posts a buffer in slot 0 and returns where a recvfrom(2) probe
// receives: the buffer's room, and the slot's address and its length for
// an unconnected socket (nil for a connected one, whose source can only be
// Remote). p is nil when the pool had no buffer. A probe that found
// nothing leaves slot 0 as it was: the next one calls post for nothing.
func (d *Device) probeSlot() (p []byte, name *unix.RawSockaddrInet6, namelen *uint32) {
	r := &d.rx
	if (r.posted == 0 || r.prepared == 0 || r.dirty != 0) && d.post(1) == 0 {
		return nil, nil, nil
	}
	if !d.connected && !d.noSrc {
		name, namelen = &r.batch.Names[0], &r.batch.Hdrs[0].Hdr.Namelen
	}
	return r.slot0, name, namelen
}

// probedOne finishes a recvfrom probe into probeSlot's room of size bytes
// that got a datagram of n bytes: it makes it pending in slot 0, cut to
// size with MSG_TRUNC when it was longer, and reports true.
func (d *Device) probedOne(n, size int) bool {
	h := &d.rx.batch.Hdrs[0]
	if n > size {
		h.Hdr.Flags = unix.MSG_TRUNC
		n = size
	}
	d.pendOne(n)
	return true
}

// pendOne makes the n-byte datagram received in slot 0 pending.
func (d *Device) pendOne(n int) {
	r := &d.rx
	r.batch.Hdrs[0].Len = uint32(n)
	r.n, r.next, r.off, r.dirty = 1, 0, 0, 1
	r.drained = false
}

// post makes slots [0, n) ready for the kernel: a posted buffer in each
// (fewer when the pool runs dry: it returns how many) and the lengths and
// flags the kernel overwrote reset.
func (d *Device) post(n int) int {
	r := &d.rx
	for i := r.posted; i < n; i++ {
		if r.bufs[i] != nil {
			continue
		}
		b, err := d.alloc(r.recvSize)
		if err != nil {
			n = i
			break
		}
		r.bufs[i] = b
		room := b.Head()[d.headroom : d.headroom+r.recvSize]
		r.batch.Set(i, room)
		if i == 0 {
			r.slot0 = room
		}
	}
	r.posted = max(r.posted, n)
	if n > r.prepared {
		r.batch.PrepareRecv(n)
		r.prepared, r.dirty = n, 0
	}
	for i := range r.dirty {
		h := &r.batch.Hdrs[i].Hdr
		if r.batch.Names != nil {
			h.Namelen = unix.SizeofSockaddrInet6
		}
		h.SetControllen(r.ctrlLen)
		h.Flags = 0
	}
	r.dirty = 0
	return n
}

// warmCopy allocates and frees a buffer of the shortest and of the
// longest datagram copybreak copies, so that the pool maps the classes the
// copies come from (a first arena and its headers; 1-2 ms for the 512-byte
// class on a host where page faults are slow) at Open, as a driver sets up
// its receive resources when the device is opened, rather than under the
// first datagrams copied, whose hand-over it would delay by as much, or in
// the first Poll, which traffic may already be waiting for.
func (d *Device) warmCopy() {
	if d.copybreak <= 0 {
		return
	}
	if b, err := d.alloc(0); err == nil {
		d.cache.Free(b)
	}
	if b, err := d.alloc(d.copybreak - 1); err == nil {
		d.cache.Free(b)
	}
}

// take removes the buffer posted in slot i, which the handler now owns.
func (r *rxq) take(i int) {
	r.bufs[i] = nil
	r.posted = min(r.posted, i)
}

// alloc returns an empty buffer from the cache with at least n bytes after
// the device's headroom, which it reserves.
func (d *Device) alloc(n int) (*skb.Buff, error) {
	b, err := d.cache.Alloc(max(0, n+d.headroom-d.poolHR))
	if err != nil {
		return nil, err
	}
	if d.headroom != d.poolHR {
		setHeadroom(b, d.headroom)
	}
	return b, nil
}

// setHeadroom moves the data of the empty buffer b to hr bytes from head.
func setHeadroom(b *skb.Buff, hr int) {
	if h := b.Headroom(); hr > h {
		b.Reserve(hr - h)
	} else if hr < h {
		b.Push(h - hr)
		b.Trim(0)
	}
}

// deliver hands pending datagrams to h, up to budget, and returns how many.
func (d *Device) deliver(budget int, h netdev.Handler) int {
	r := &d.rx
	done := 0
	for r.next < r.n && done < budget {
		if d.closing() {
			// Closed by the handler: the rest counts as dropped.
			break
		}
		i := r.next
		hd := &r.batch.Hdrs[i]
		n := int(hd.Len)
		if r.off == 0 {
			if hd.Hdr.Flags&unix.MSG_TRUNC != 0 || n > r.recvSize {
				d.ctr.RxDrop(netdev.DropTruncated, 1)
				r.next++
				continue
			}
			r.seg, r.dst = 0, netip.Addr{}
			if hd.Hdr.Controllen > 0 {
				d.parseCtrl(i, int(hd.Hdr.Controllen))
			}
			if l := n; l > r.maxDgram {
				// Longer than RecvSize though the buffer held it (a
				// GRO device's buffers hold whole trains): its
				// datagrams are dropped, as the kernel cuts them
				// without GRO.
				k := 1
				if r.seg > 0 && n > r.seg {
					l, k = r.seg, (n+r.seg-1)/r.seg
				}
				if l > r.maxDgram {
					d.ctr.RxDrop(netdev.DropTruncated, k)
					r.next++
					continue
				}
			}
		}
		r.cur = i
		if r.seg > 0 && n > r.seg {
			done += d.deliverTrain(i, n, budget-done, h)
			continue
		}
		b := r.bufs[i]
		r.next++
		if n < d.copybreak {
			c, err := d.alloc(n)
			if err == nil {
				copy(c.Put(n), b.Head()[d.headroom:d.headroom+n])
				d.ctr.RxCopybreak()
				d.ctr.RxPacket(n)
				done++
				h(c)
				continue
			}
		}
		r.take(i)
		b.Put(n)
		d.ctr.RxPacket(n)
		done++
		h(b)
	}
	return done
}

// deliverTrain hands the datagrams of the GRO train in slot i (n bytes of
// r.seg-byte segments, the last possibly shorter) to h, up to budget, from
// byte r.off on; it finishes the message when the train is done. A segment
// shorter than the copybreak threshold is copied into a right-sized buffer;
// a longer one is a clone of the train's buffer trimmed to the segment (as
// the kernel's skb_segment_list makes clones of one head), so that the
// bytes are not copied. The train's buffer stays posted when every segment
// was copied.
func (d *Device) deliverTrain(i, n, budget int, h netdev.Handler) int {
	r := &d.rx
	b := r.bufs[i]
	seg := r.seg
	done := 0
	for r.off < n && done < budget && !d.closing() {
		l := min(seg, n-r.off)
		var c *skb.Buff
		if l < d.copybreak {
			if nb, err := d.alloc(l); err == nil {
				copy(nb.Put(l), b.Head()[d.headroom+r.off:d.headroom+r.off+l])
				d.ctr.RxCopybreak()
				c = nb
			}
		}
		if c == nil {
			if b.Len() == 0 {
				b.Put(n)
			}
			c = d.cache.Clone(b)
			c.Pull(r.off)
			c.Trim(l)
		}
		r.off += l
		d.ctr.RxPacket(l)
		done++
		h(c)
	}
	if r.off >= n {
		if b.Len() != 0 {
			// Clones hold the buffer now: drop the device's reference.
			d.cache.Free(b)
			r.take(i)
		}
		r.next++
		r.off = 0
	}
	return done
}

// parseCtrl reads the control messages of slot i: the GRO segment size
// and the local address (PktInfo).
func (d *Device) parseCtrl(i, n int) {
	r := &d.rx
	c := r.batch.Ctrl(i)
	if n > len(c) {
		n = len(c)
	}
	r.dst = netip.Addr{}
	for level, typ, data, rest, ok := mmsg.NextCmsg(c[:n]); ok; level, typ, data, rest, ok = mmsg.NextCmsg(rest) {
		if level == unix.SOL_UDP && typ == unix.UDP_GRO {
			r.seg = int(int32(mmsg.CmsgInt(data)))
		} else if a, ok := mmsg.PktinfoAddr(level, typ, data); ok && (level == unix.IPPROTO_IP || !r.dst.IsValid()) {
			// An IPv4 datagram on a dual-stack socket brings both:
			// IP_PKTINFO's ipi_spec_dst, the local address, wins over
			// IPV6_PKTINFO's header destination (a broadcast one).
			r.dst = a
		}
	}
	if r.seg < 0 {
		r.seg = 0
	}
}

// Src returns the source address of the datagram most recently handed to
// Poll's handler: during the handler, the datagram it was given. It stays
// valid until the next Poll or Wait receives more. An IPv4 source on a
// dual-stack socket is given as IPv4; IPv6 zones are not kept. It returns
// the zero AddrPort before the first datagram, and always on a device
// opened with Config.NoSrc (connected or not). It allocates nothing.
func (d *Device) Src() netip.AddrPort {
	r := &d.rx
	if r.cur < 0 || d.noSrc {
		return netip.AddrPort{}
	}
	if d.connected {
		// The kernel delivers a connected socket Remote's datagrams
		// only (and a busy-polling probe does not ask for the address).
		return d.remoteSrc
	}
	return mmsg.AddrPort(&r.batch.Names[r.cur], r.batch.Hdrs[r.cur].Hdr.Namelen)
}

// DstAddr returns the address of this host that the datagram most recently
// handed to Poll's handler was sent to, on a device opened with
// Config.PktInfo: during the handler, the datagram it was given; it stays
// valid until the next Poll or Wait receives more. For IPv4 it is
// IP_PKTINFO's ipi_spec_dst, the local address the datagram came in on
// (for a broadcast, the one the route picks), also on a dual-stack socket;
// for IPv6 IPV6_PKTINFO's ipi6_addr, the header's destination (a multicast
// group for a multicast datagram, which cannot be a source). An IPv4
// address on a dual-stack socket is given as IPv4, and IPv6 zones are not
// kept (the interface index is dropped), as with Src. It returns the zero
// Addr without PktInfo, and before the first datagram. Answer from it with
// XmitFrom. It allocates nothing.
func (d *Device) DstAddr() netip.Addr {
	if d.rx.cur < 0 {
		return netip.Addr{}
	}
	return d.rx.dst
}

// Wait blocks until Poll would find a datagram, or timeout passes (a
// negative timeout waits without limit, zero only looks). It returns nil
// when there is something to receive, netdev.ErrTimeout, ErrClosed once the
// device is closed (Close wakes a waiting Wait), an error wrapping
// pool.ErrExhausted at once when the pool has no buffer to receive into (as
// Poll's), or the receive call's error prefixed "udp: wait: ". A timeout is kept to within the thread's timer
// slack (50 µs by default) and the scheduler's latency, not rounded to the
// kernel's tick (1-10 ms): a Wait of 1 ms returns after about 1 ms. One
// exception, the kernel's: datagrams with a bad UDP checksum arriving more
// often than every few ticks hold a Wait of more than a few ticks past its
// timeout (each restarts the kernel's receive timeout; see sleep). The
// first receive call of a device, a Wait of any timeout too, posts its
// receive buffers first (with BusyPoll, a Wait posts the one it probes
// with), taking them from the pool, which grows for them:
// 0.5-0.75 ms for a fresh pool and a batch of 64-KiB buffers (GRO's),
// less for the default 2-KiB ones, about 1 µs for later calls.
//
// Wait receives itself, with one recvmmsg(2) with MSG_WAITFORONE that sleeps
// in the kernel (bounded by SO_RCVTIMEO) until the first datagram comes and
// then takes what else is queued, and leaves them for the next Poll, which
// hands them over without another call when that one emptied the queue: one
// system call per wake-up, where sleeping in poll(2) and receiving in Poll
// took two and more (measured on a loopback round trip: p50 56-68 µs
// against 83-89 µs for poll(2), the C reference 40-48 µs in the same runs).
// Once such a wait woke with one datagram, the next ones sleep in a
// recvfrom(2) of one instead, until a batch asked for every eighth wait
// brings more (see waitRecv): on a blocking loopback ping-pong p50 0.956x
// the batch wait's (ten ABBA rounds), and skb sink fed at one datagram per
// doorbell by skb pktgen 1.05x the datagrams per second;
// a sink in the sender's own process measured 0.95-0.97x at one datagram
// per doorbell and 1.06x at 64.
// With Config.BusyPoll it spins instead, probing with non-blocking
// recvfrom(2) (recvmsg(2) with GRO or PktInfo, for the control messages),
// which costs the kernel less than a recvmmsg that finds one datagram and
// tries for a second, in rounds of spinTries probes with nothing between
// them (mmsg.RecvfromSpin), reading the clock and looking at Close between
// rounds: a Wait that times out ends up to a round and a probe (tens of
// µs) after its timeout. BusyPoll spins the same way and hands over what
// it finds.
//
// The Go scheduler takes the P of a goroutine that sleeps in a system call
// for more than 20 µs when no other P is idle, and the goroutine must get
// one back when it wakes: a program that runs with GOMAXPROCS=1 (for
// example when pinned to one CPU) pays for that on every wake-up, one with
// an idle P does not. With Config.KeepP the receive that sleeps keeps its
// P (see KeepP for what that costs the program's other goroutines), and
// Wait still returns ErrTimeout only once timeout has passed.
func (d *Device) Wait(timeout time.Duration) error {
	if !d.enter() {
		return errWaitClosed
	}
	defer d.exit()
	r := &d.rx
	if r.next < r.n {
		return nil
	}
	if d.busy {
		return d.spin(timeout)
	}
	return d.sleep(timeout)
}

// spin is Wait's busy poll: spinRecv, with its outcome made Wait's
// error.
func (d *Device) spin(timeout time.Duration) error {
	switch st, e := d.spinRecv(timeout); st {
	case spinGot:
		return nil
	case spinTimeout:
		return netdev.ErrTimeout
	case spinClosed:
		return errWaitClosed
	case spinNoBuf:
		return errWaitNoBuf
	default:
		return fmt.Errorf("udp: wait: %w", e)
	}
}

// spinTries is how many probes of an empty socket one round of a busy
// poll makes (mmsg.RecvfromSpin) before it looks at the clock and at
// Close: 11 µs at 350 ns a system call, 45 µs at 1.4 µs under a
// hypervisor where system calls are slow. The round has no preemption
// point; the loop between rounds has.
const spinTries = 32

// spinState is how spinRecv ended.
type spinState uint8

const (
	spinGot     spinState = iota // a datagram is pending in slot 0
	spinTimeout                  // the timeout passed with none
	spinClosed                   // the device was closed
	spinNoBuf                    // the pool had no buffer to post
	spinErr                      // the receive call failed: see the errno
)

// spinRecv probes with non-blocking receives of one datagram, in rounds
// of spinTries, until one comes (it is then pending for the Poll that
// follows), timeout passes (negative: never; zero: one probe), the device
// is closed, or a receive fails. The clock is read as BusyPoll's spin
// reads it (busy.over).
func (d *Device) spinRecv(timeout time.Duration) (spinState, unix.Errno) {
	sp := busy{timeout: timeout}
	for {
		var ok bool
		var e unix.Errno
		if d.rx.ctrlLen > 0 {
			// GRO or PktInfo: recvmsg, for the control message, one
			// call at a time.
			for range sp.tries() {
				if ok, e = d.recvOne(unix.MSG_DONTWAIT); ok || e != unix.EAGAIN {
					break
				}
			}
		} else {
			p, name, namelen := d.probeSlot()
			if p == nil {
				return spinNoBuf, 0
			}
			var n, calls int
			n, e, calls = mmsg.RecvfromSpin(d.fd, p, name, namelen, sp.tries())
			d.tickDropsN(calls)
			switch e {
			case 0:
				ok = d.probedOne(n, len(p))
			case unix.EINTR:
				e = unix.EAGAIN
			}
		}
		if d.closing() {
			d.rx.discard(d)
			return spinClosed, 0
		}
		switch {
		case ok:
			return spinGot, 0
		case e == 0:
			return spinNoBuf, 0
		case e != unix.EAGAIN:
			return spinErr, e
		case sp.over():
			return spinTimeout, 0
		}
	}
}

// sleep waits in a blocking recvmmsg with MSG_WAITFORONE, bounded by
// SO_RCVTIMEO, for datagrams, which are then pending for Poll. Close's
// shutdown wakes it. Receiving in the call that sleeps, rather than
// sleeping in poll(2) and receiving in Poll, saves a system call on the
// wake-up path; measured on a loopback round trip it is also what keeps the
// Go scheduler off that path.
//
// The kernel counts SO_RCVTIMEO in ticks and ends it late by up to two
// (8 ms at HZ=250; a Wait of 1 µs slept 8 ms): the receive that sleeps is
// given only the part of a positive timeout it cannot overrun
// (sleepable), and the rest, or all of a timeout shorter than three ticks,
// is slept in ppoll(2), whose timer keeps time to tens of µs, with a
// receive that does not sleep after it. The clock is read for a positive
// timeout only: once before the first sleep, and after each that ends
// without a datagram. With KeepP each sleep lasts heldSlice at most, and
// one that ends without a datagram (the runtime's preemption signal,
// EINTR, or the slice over) is followed by runtime.Gosched, which lets the
// runtime have the P, before the next.
//
// A stream of datagrams whose UDP checksum is bad keeps a sleeping receive
// from ending: the kernel drops each and receives again, with its receive
// timeout started over (udp_recvmsg), so such a stream, more often than
// the SO_RCVTIMEO part, holds Wait past its timeout (with KeepP, the
// preemption signal still ends each slice).
func (d *Device) sleep(timeout time.Duration) error {
	r := &d.rx
	if timeout == 0 {
		k, err := d.recv(len(r.bufs), unix.MSG_DONTWAIT)
		return d.woke(k, err)
	}
	var start time.Duration
	if timeout > 0 {
		start = monoNow()
	}
	left := timeout
	for {
		slice := left // negative: without end
		if timeout > 0 {
			slice = sleepable(left)
		}
		if d.keepP && (slice < 0 || slice > heldSlice) {
			slice = heldSlice
		}
		var k int
		var err error
		if slice != 0 {
			if err := d.setRcvTimeo(slice); err != nil {
				return err
			}
			k, err = d.waitRecv()
		} else {
			k, err = d.pollRecv(left)
		}
		if k > 0 || err != unix.EINTR && err != unix.EAGAIN {
			return d.woke(k, err)
		}
		if d.closing() {
			r.discard(d)
			return errWaitClosed
		}
		if timeout > 0 {
			if left = timeout - (monoNow() - start); left <= 0 {
				return netdev.ErrTimeout
			}
		}
		if d.keepP {
			// Before the next sleep, not before returning: the caller
			// may have its own use for the P.
			runtime.Gosched()
		}
	}
}

// tick is the kernel's scheduler tick (a jiffy, 1/HZ s), in which it
// counts SO_RCVTIMEO: the resolution of CLOCK_MONOTONIC_COARSE
// (clock_getres(2)), which advances once a tick; 10 ms, the longest tick
// (HZ=100), where that is not between 1 and 10 ms.
var tick = kernelTick()

func kernelTick() time.Duration {
	var ts unix.Timespec
	if unix.ClockGetres(unix.CLOCK_MONOTONIC_COARSE, &ts) == nil {
		if d := time.Duration(ts.Nano()); d >= time.Millisecond && d <= 10*time.Millisecond {
			return d
		}
	}
	return 10 * time.Millisecond
}

// sleepable returns the longest SO_RCVTIMEO that cannot end after left, in
// whole ticks (so that waits of one length set the socket's timeout once),
// or 0 when that is under a tick. The kernel rounds the timeout up to
// whole ticks, and its timer wheel ends it on the tick after it expires,
// or, for 64 ticks and more, on a coarser grain of at most an eighth of it
// (kernel/time/timer.c): up to two ticks and an eighth late.
func sleepable(left time.Duration) time.Duration {
	s := left - 2*tick - left/8
	if s < tick {
		return 0
	}
	return s - s%tick
}

// pollRecv is sleep's precise part: it sleeps in ppoll(2) until the socket
// is readable or left passes (heldSlice at most with KeepP), and then
// receives what is queued without sleeping. It returns the datagrams
// received, now pending, and EAGAIN when none came, EINTR when a signal
// ended the sleep, or the receive's error.
func (d *Device) pollRecv(left time.Duration) (int, error) {
	if d.rx.posted == 0 {
		// Buffers for the receive that follows the sleep (all of a fresh
		// device's), posted before it rather than after the wake-up, as a
		// Wait that sleeps in a receive posts them.
		d.post(len(d.rx.bufs))
	}
	var ok bool
	var e unix.Errno
	if d.keepP {
		ok, e = mmsg.PollInHeld(d.fd, min(left, heldSlice))
	} else {
		ok, e = mmsg.PollIn(d.fd, left)
	}
	switch {
	case e != 0:
		return 0, e
	case !ok:
		return 0, unix.EAGAIN
	}
	return d.recv(len(d.rx.bufs), unix.MSG_DONTWAIT)
}

// waitProbe is how often a Wait that sleeps in a receive of one datagram
// (rxq.waitOne) asks for a batch instead: every waitProbe-th time.
const waitProbe = 8

// waitRecv makes the receive that sleeps until a datagram comes, bounded
// by SO_RCVTIMEO, and returns how many datagrams it received, now pending,
// and its error: with KeepP, EINTR when a signal ended the sleep, for
// sleep to handle (without KeepP an interrupted call is made again).
//
// A recvmmsg(2) with MSG_WAITFORONE that wakes for one datagram then tries
// for a second that is not there: the kernel's receive work twice, on
// every wake-up of traffic with one datagram in flight (a request and its
// answer). Once a batch receive woke with one datagram, the waits after it
// sleep in a recvfrom(2) of one (no msghdr, no second try) and leave Poll
// nothing to ask for; every waitProbe-th asks for a batch again and stays
// with batches while they bring more than one. A device with control
// messages (GRO, PktInfo) always asks for a batch.
func (d *Device) waitRecv() (int, error) {
	r := &d.rx
	if r.waitOne && r.ctrlLen == 0 {
		if r.waits++; r.waits%waitProbe != 0 {
			return d.waitOneRecv()
		}
	}
	k, err := d.recv(len(r.bufs), unix.MSG_WAITFORONE)
	if err == nil {
		r.waitOne = k == 1
	}
	return k, err
}

// waitOneRecv is waitRecv's receive of one datagram, into slot 0: a
// blocking recvfrom(2), raw with KeepP (EINTR returned), through the
// scheduler without it (EINTR retried). The datagram is pending, and Poll
// hands it over without another call.
func (d *Device) waitOneRecv() (int, error) {
	p, name, namelen := d.probeSlot()
	if p == nil {
		return 0, errPollNoBuf
	}
	var n int
	var e unix.Errno
	for {
		if d.keepP {
			n, e = mmsg.RecvfromHeld(d.fd, p, name, namelen)
			break
		}
		if n, e = mmsg.RecvfromWait(d.fd, p, name, namelen); e != unix.EINTR {
			break
		}
	}
	d.tickDrops()
	if e != 0 {
		return 0, e
	}
	d.probedOne(n, len(p))
	d.rx.drained = true
	return 1, nil
}

// heldSlice is the longest a KeepP device asks one sleep to last. The runtime's
// preemption signal ends such a sleep early; where the program has that
// signal off (GODEBUG=asyncpreemptoff=1 set by a //go:debug line, which
// Open cannot see, or SIGURG ignored after Open) the slice bounds how long
// a stop of the world waits for the sleeping call. A receive needs a
// finite receive timeout either way: without one the kernel restarts an
// interrupted receive (see mmsg.RecvmmsgHeld). A variable for the tests.
var heldSlice = 10 * time.Millisecond

// monoBase is where monoNow counts from.
var monoBase = time.Now()

// monoNow reads the monotonic clock alone (time.Now reads the wall clock
// too): the time since monoBase.
func monoNow() time.Duration { return time.Since(monoBase) }

// setRcvTimeo sets the socket's receive timeout (SO_RCVTIMEO) to timeout
// (none when negative), unless it is set to that already.
func (d *Device) setRcvTimeo(timeout time.Duration) error {
	r := &d.rx
	if timeout == r.timeo {
		return nil
	}
	tv := unix.NsecToTimeval(max(timeout, 0).Nanoseconds())
	if timeout > 0 && tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1
	}
	if err := unix.SetsockoptTimeval(d.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("udp: wait: setsockopt SO_RCVTIMEO: %w", err)
	}
	r.timeo = timeout
	return nil
}

// woke is sleep's result for a blocking receive that returned k datagrams
// and err.
func (d *Device) woke(k int, err error) error {
	r := &d.rx
	if d.closing() {
		r.discard(d)
		return errWaitClosed
	}
	switch {
	case k > 0:
		return nil
	case err == errPollNoBuf:
		return errWaitNoBuf
	case err == unix.EAGAIN:
		return netdev.ErrTimeout
	}
	return fmt.Errorf("udp: wait: %w", err)
}

// pending returns the datagrams received and not yet handed over.
func (r *rxq) pending(d *Device) int {
	k := 0
	for i := r.next; i < r.n; i++ {
		hd := &r.batch.Hdrs[i]
		n := int(hd.Len)
		if hd.Hdr.Flags&unix.MSG_TRUNC != 0 {
			continue
		}
		if i == r.next && r.off > 0 {
			n -= r.off // a train partly handed over; r.seg is its segment size
		} else {
			r.seg = 0
			d.parseCtrl(i, int(hd.Hdr.Controllen))
		}
		if r.seg > 0 && n > r.seg {
			k += (n + r.seg - 1) / r.seg
		} else {
			k++
		}
	}
	return k
}

// discard drops the pending messages of a closing device, counting their
// datagrams in rx_dropped_closed (their buffers stay posted and are freed
// by release).
func (r *rxq) discard(d *Device) {
	if k := r.pending(d); k > 0 {
		d.ctr.RxDrop(netdev.DropClosed, k)
	}
	r.n, r.next, r.off = 0, 0, 0
}

// release frees the posted buffers and counts pending datagrams as dropped.
func (r *rxq) release(d *Device) {
	r.discard(d)
	for i, b := range r.bufs {
		if b != nil {
			d.cache.Free(b)
			r.take(i)
		}
	}
}
