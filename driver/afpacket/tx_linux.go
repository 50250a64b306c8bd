//go:build linux

package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/internal/ring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Xmit queues the whole Ethernet frame in b for transmission and rings the
// doorbell unless more is true and the batch has room (netdev.Device,
// ndo_start_xmit with xmit_more). Xmit takes ownership of b, also when it
// returns an error.
//
// With TxMmsg the buffer itself is queued, sent by the doorbell's
// sendmmsg(2) and freed after it (seed 000: no clone). With TxRing the frame
// is copied into the next transmit ring slot and b is freed at once; the
// doorbell is a send(2) that sends every filled slot. A buffer with a
// CHECKSUM_PARTIAL checksum has it completed first (the socket has no
// checksum offload), on a private copy when b's data is shared.
//
// The doorbell is rung when more is false, when the batch (Config.Batch) is
// full, when the ring is full, and whenever Xmit returns an error, so that
// nothing queued is stranded. Errors, each prefixed "afpacket: xmit
// <ifname>: ": ErrShortFrame (under 14 bytes) and netdev.ErrTooBig (over
// MTU+14, or MTU+18 with a VLAN tag) for a frame the kernel would refuse;
// pool.ErrExhausted (or skb.ErrTooBig) when the frame needed a buffer the
// pool did not have (to linearize it, complete its checksum on a private
// copy, or make room for the virtio header);
// netdev.ErrQueueFull when the ring stayed full after the doorbell or the
// kernel's queue refused frames (with the errno, EAGAIN or ENOBUFS); the
// errno of a failed doorbell otherwise (frames it did not send are dropped
// and counted in tx_dropped: with TxMmsg the frame the kernel refused, the
// others sent; with TxRing that frame and every frame queued behind it,
// under its errno's reason, as the kernel stops at the first frame it
// refuses, one longer than an MTU lowered after Open, say);
// net.ErrClosed after Close (b freed and counted in tx_dropped_closed).
func (d *Device) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("afpacket", b)
	}
	if !d.enter() {
		b.Free()
		d.ctr.TxDrop(netdev.DropClosed, 1)
		return d.errs.xmitClosed
	}
	defer d.exit()
	l := b.Len()
	if err := d.checkLen(b, l); err != nil {
		d.cache.Free(b)
		d.kick()
		return err
	}
	if d.g.mode == TxRing {
		return d.xmitRing(b, l, more)
	}
	if b.IsNonlinear() || b.IPSummed() == skb.ChecksumPartial {
		if err := d.prepare(b); err != nil {
			return d.noBuffer(b, err)
		}
	}
	data := b.Data()
	if d.cfg.VnetHdr {
		if err := b.CowHead(d.cache, vnetHdrLen); err != nil {
			return d.noBuffer(b, err)
		}
		clear(b.Push(vnetHdrLen))
		data = b.Data()
	}
	d.batch.Set(d.txn, data)
	d.txq[d.txn] = b
	d.txn++
	if more && d.txn < len(d.txq) {
		return nil
	}
	return d.sendBatch()
}

// noBuffer drops b, which Xmit could not make ready to send for want of a
// buffer (err, the pool's: pool.ErrExhausted, or skb.ErrTooBig for a head
// no block holds), rings the doorbell for what is queued, and returns err
// with Xmit's prefix, made at Open for those two.
func (d *Device) noBuffer(b *skb.Buff, err error) error {
	d.cache.Free(b)
	d.ctr.TxDrop(netdev.DropNoBuffer, 1)
	d.kick()
	switch {
	case errors.Is(err, pool.ErrExhausted):
		return d.errs.noBuf
	case errors.Is(err, skb.ErrTooBig):
		return d.errs.noBufTooBig
	}
	return fmt.Errorf("afpacket: xmit %s: %w", d.cfg.Ifname, err)
}

// checkLen returns the error for a frame of l bytes the kernel would refuse
// (dev_validate_header, packet_snd's MTU test), counting the drop.
func (d *Device) checkLen(b *skb.Buff, l int) error {
	if l < header.EthernetHeaderLen {
		d.ctr.TxDrop(netdev.DropMalformed, 1)
		return d.errs.short
	}
	if l > d.mtu+header.EthernetHeaderLen &&
		(l > d.mtu+header.EthernetHeaderLen+header.VLANTagLen || !d.vlanTagged(b)) ||
		d.g.mode == TxRing && l > d.g.txFrameSize-txData-d.vnetLen() {
		d.ctr.TxDrop(netdev.DropTooBig, 1)
		return d.errs.tooBig
	}
	return nil
}

// vlanTagged reports whether the frame in b carries an 802.1Q tag, which
// the kernel allows 4 bytes over the MTU (packet_extra_vlan_len_allowed:
// EtherType 0x8100 only; an 802.1ad tag gets no allowance, and such a
// frame over the MTU is refused with EMSGSIZE).
func (d *Device) vlanTagged(b *skb.Buff) bool {
	var et [2]byte
	if b.CopyBits(12, et[:]) != nil {
		return false
	}
	return binary.BigEndian.Uint16(et[:]) == header.EtherTypeVLAN
}

// prepare makes b linear and completes a CHECKSUM_PARTIAL checksum, for
// sendmmsg's one iovec per frame.
func (d *Device) prepare(b *skb.Buff) error {
	if b.IPSummed() == skb.ChecksumPartial && b.Cloned() {
		if err := b.Unshare(d.cache); err != nil {
			return err
		}
	}
	if err := b.Linearize(d.cache); err != nil {
		return err
	}
	if b.IPSummed() == skb.ChecksumPartial {
		if err := header.FinishChecksum(b.Data(), b.CsumStart(), b.CsumOffset()); err == nil {
			b.SetChecksumNone()
		}
	}
	return nil
}

// kick rings the doorbell for whatever is queued, on an error path.
func (d *Device) kick() {
	if d.g.mode == TxRing {
		if d.txPend > 0 {
			d.ringDoorbell()
		}
		return
	}
	if d.txn > 0 {
		d.sendBatch()
	}
}

// Flush rings the doorbell now for whatever Xmit queued (netdev.Device). It
// returns the error of the doorbell as Xmit does, or one matching
// net.ErrClosed after Close.
func (d *Device) Flush() error {
	if !d.enter() {
		return d.errs.flushClosed
	}
	defer d.exit()
	if d.g.mode == TxRing {
		if d.txPend == 0 {
			return nil
		}
		return d.ringDoorbell()
	}
	if d.txn == 0 {
		return nil
	}
	return d.sendBatch()
}

// TxAvail returns how many more frames Xmit can queue before it rings the
// doorbell because the batch or the ring is full (netdev.Device).
func (d *Device) TxAvail() int {
	if !d.enter() {
		return 0
	}
	defer d.exit()
	if d.g.mode != TxRing {
		return len(d.txq) - d.txn
	}
	n := 0
	for slot := d.txHead; n < d.g.batch-d.txPend; n++ {
		if ring.Load32(d.tx, slot*d.g.txFrameSize+hStatus)&txBusy != 0 {
			break
		}
		if slot++; slot == d.g.txFrames {
			slot = 0
		}
	}
	return n
}

// sendBatch is TxMmsg's doorbell: one sendmmsg(2) for the queued frames,
// repeated for the rest after a short count. A frame the kernel refuses is
// dropped and the rest sent; after EAGAIN (the socket's send buffer is full)
// the rest is dropped. Every queued buffer is freed and the first error
// returned.
func (d *Device) sendBatch() error {
	n := d.txn
	var first error
	for sent := 0; sent < n; {
		k, e := sendmmsgRaw(d.fd, d.batch, sent, n-sent)
		if e != 0 {
			if e == unix.EINTR {
				continue
			}
			if first == nil {
				first = d.errno("xmit", e)
			}
			drop := 1
			if e == unix.EAGAIN {
				drop = n - sent
			}
			d.ctr.TxDrop(dropReason(e), drop)
			if e == unix.EAGAIN {
				d.ctr.TxRingFull()
			}
			sent += drop
			continue
		}
		bytes := -k * d.vnetLen() // the frames' bytes, without the virtio headers
		for i := sent; i < sent+k; i++ {
			bytes += int(d.batch.Iov[i].Len)
		}
		d.ctr.TxDoorbell(k, bytes)
		sent += k
	}
	for i := range n {
		d.cache.Free(d.txq[i])
		d.txq[i] = nil
	}
	d.txn = 0
	return first
}

// dropReason maps a send errno to the drop counter it goes to.
func dropReason(e unix.Errno) netdev.DropReason {
	switch e {
	case unix.EAGAIN, unix.ENOBUFS:
		return netdev.DropRingFull
	case unix.EMSGSIZE:
		return netdev.DropTooBig
	}
	return netdev.DropError
}

// xmitRing copies b into the next transmit ring slot.
func (d *Device) xmitRing(b *skb.Buff, l int, more bool) error {
	fs := d.g.txFrameSize
	slot := d.txHead * fs
	if ring.Load32(d.tx, slot+hStatus)&txBusy != 0 {
		// The kernel still holds the slot: kick what is pending and look
		// again.
		d.ctr.TxRingFull()
		var err error
		if d.txPend > 0 {
			err = d.ringDoorbell()
		}
		slot = d.txHead * fs
		if ring.Load32(d.tx, slot+hStatus)&txBusy != 0 {
			d.cache.Free(b)
			d.ctr.TxDrop(netdev.DropRingFull, 1)
			if err == nil {
				err = d.errs.queueFull
			}
			return err
		}
	}
	v := d.vnetLen()
	if v != 0 {
		clear(d.tx[slot+txData : slot+txData+v])
	}
	data := d.tx[slot+txData+v : slot+txData+v+l : slot+txData+v+l]
	if err := b.CopyBits(0, data); err != nil {
		// Cannot happen for l = b.Len(); keep the slot free.
		d.cache.Free(b)
		d.ctr.TxDrop(netdev.DropError, 1)
		d.kick()
		return d.errs.short
	}
	if b.IPSummed() == skb.ChecksumPartial {
		_ = header.FinishChecksum(data, b.CsumStart(), b.CsumOffset())
	}
	d.cache.Free(b)
	ne.PutUint32(d.tx[slot+hLen:], uint32(v+l))
	ne.PutUint32(d.tx[slot+hSnaplen:], uint32(v+l))
	ring.Store32(d.tx, slot+hStatus, unix.TP_STATUS_SEND_REQUEST)
	if d.txPend == 0 {
		d.txFirst = d.txHead
	}
	d.txPend++
	if d.txHead++; d.txHead == d.g.txFrames {
		d.txHead = 0
	}
	if more && d.txPend < d.g.batch {
		return nil
	}
	return d.ringDoorbell()
}

// ringDoorbell is TxRing's doorbell: a send(2) of no data, which makes the
// kernel send every slot marked TP_STATUS_SEND_REQUEST from its head on
// (tpacket_snd); the socket is non-blocking, so it does not wait for
// completions. Slots still marked afterwards were not sent: the kernel
// stopped at the first of them (an error, or its send buffer full), which is
// where its head stays. After one retry they are handed back (status
// available) and txHead moves back to the first, so the kernel's head and
// ours agree; their frames are dropped and counted.
func (d *Device) ringDoorbell() error {
	var first error
	for try := 0; ; try++ {
		e := kickRaw(d.fd)
		if e == unix.EINTR {
			continue
		}
		if e != 0 && first == nil {
			first = d.errno("xmit", e)
		}
		sent, bytes := d.reap()
		if sent > 0 {
			d.ctr.TxDoorbell(sent, bytes)
		}
		if d.txPend == 0 {
			return first
		}
		if try == 1 || (e != 0 && e != unix.EAGAIN && e != unix.ENOBUFS) {
			reason := netdev.DropRingFull
			if e != 0 {
				reason = dropReason(e)
			}
			d.unwind(reason)
			if first == nil {
				first = d.errs.queueFull
			}
			return first
		}
	}
}

// reap moves txFirst past the pending slots the kernel took, in order, and
// returns how many and their bytes.
func (d *Device) reap() (sent, bytes int) {
	fs := d.g.txFrameSize
	for d.txPend > 0 {
		slot := d.txFirst * fs
		if ring.Load32(d.tx, slot+hStatus)&(unix.TP_STATUS_SEND_REQUEST|unix.TP_STATUS_WRONG_FORMAT) != 0 {
			break
		}
		sent++
		bytes += int(ne.Uint32(d.tx[slot+hLen:])) - d.vnetLen()
		d.txPend--
		if d.txFirst++; d.txFirst == d.g.txFrames {
			d.txFirst = 0
		}
	}
	return sent, bytes
}

// unwind hands back the slots the kernel did not send and drops their
// frames.
func (d *Device) unwind(reason netdev.DropReason) {
	fs := d.g.txFrameSize
	slot := d.txFirst
	for range d.txPend {
		ring.Store32(d.tx, slot*fs+hStatus, unix.TP_STATUS_AVAILABLE)
		if slot++; slot == d.g.txFrames {
			slot = 0
		}
	}
	d.ctr.TxDrop(reason, d.txPend)
	d.txHead = d.txFirst
	d.txPend = 0
}
