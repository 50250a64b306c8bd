//go:build linux

package afpacket

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/internal/ring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

var ne = binary.NativeEndian

// Poll receives up to budget frames from the receive ring without blocking
// and calls h with each, in arrival order (netdev.Device, napi_poll). It
// returns how many it handed to h.
//
// Every frame is copied out of the ring into a buffer from Cache: a
// right-sized one for a frame shorter than the copybreak threshold
// (rx_copybreak), a full 2 KiB one otherwise (larger for a larger frame),
// with the configured headroom reserved; a block goes back to the kernel as
// soon as its last frame is copied. The buffer holds the whole frame from
// its Ethernet header (the mac header, at the start of the data), a VLAN tag
// the kernel took out put back in its place; the network and transport
// header offsets and the protocol (the EtherType after any VLAN tags) are
// set as header.ParseFrame finds them; the receive timestamp is the
// kernel's; a frame whose checksum the kernel verified is
// CHECKSUM_UNNECESSARY, and one sent from this host with its checksum still
// to be computed (TP_STATUS_CSUMNOTREADY) is CHECKSUM_PARTIAL over its UDP
// or TCP header. With Config.VnetHdr a GSO super-frame has its GSO size,
// segment count and type set from the kernel's virtio_net_hdr.
//
// A frame cut short by SnapLen or the block size is dropped (rx_truncated),
// a frame for which no buffer is left is dropped (rx_dropped_nobuf), and
// frames the kernel dropped because the ring was full are counted from
// PACKET_STATISTICS (rx_dropped_kernel). h owns each buffer it gets. Poll
// returns an error matching net.ErrClosed after Close, and, every
// linkPolls Polls that found nothing, the socket's pending error: ENODEV
// once the interface was removed (a spinning receiver calls no Wait).
func (d *Device) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("afpacket: Poll with a nil handler")
	}
	if !d.enterPoll() {
		return 0, d.errs.pollClosed
	}
	defer d.exitPoll()
	if d.rx == nil {
		return 0, nil
	}
	n := 0
	// The ring's counts of this Poll, added to the device's once, when it
	// returns (also when a handler panics).
	var c ringCounts
	defer d.addRingCounts(&c)
	bs := d.g.blockSize
	for n < budget {
		base := d.rxBlk * bs
		if d.rxLeft == 0 {
			st := ring.Load32(d.rx, base+bdStatus)
			if st&unix.TP_STATUS_USER == 0 {
				break
			}
			if st&unix.TP_STATUS_LOSING != 0 {
				d.kernelStats()
			}
			d.rxLeft = int(ne.Uint32(d.rx[base+bdNumPkts:]))
			d.rxOff = int(ne.Uint32(d.rx[base+bdFirstPkt:]))
			if d.rxLeft == 0 {
				// An empty block (the kernel never retires one): hand
				// it back, or it would be read again for ever.
				d.releaseBlock(base)
				c.blocks++
				continue
			}
		}
		blk := d.rx[base : base+bs : base+bs]
		for d.rxLeft > 0 && n < budget {
			off := d.rxOff
			if off < bdHeaderSize || off > bs-sllEnd {
				// The kernel never writes this; stop reading the block
				// rather than read outside it, and hand it back.
				d.ctr.RxDrop(netdev.DropMalformed, d.rxLeft)
				d.rxLeft = 0
				d.releaseBlock(base)
				c.blocks++
				break
			}
			next := int(ne.Uint32(blk[off+hNext:]))
			b, what := d.frame(blk, off)
			// The frame is copied out: the ring moves past it (and hands
			// its block back after the last) before the handler runs, so
			// that a handler that panics, and is recovered, does not get
			// it again from the next Poll.
			d.rxLeft--
			d.rxOff = off + next
			if d.rxLeft == 0 {
				d.releaseBlock(base)
				c.blocks++
			}
			switch what {
			case delivered:
				n++
				h(b)
			case deliveredUnparsed:
				n++
				c.unparsed++
				h(b)
			case skippedOutgoing:
				c.outgoing++
			}
			if d.state.Load()&1 != 0 {
				// Closed by the handler, or from another goroutine.
				budget = n
				break
			}
		}
	}
	if d.state.Load()&1 != 0 {
		return n, d.errs.pollClosed
	}
	if n == 0 {
		if d.empty++; d.empty%linkPolls == 0 {
			return 0, d.linkError("poll")
		}
	}
	return n, nil
}

// What became of one frame.
const (
	delivered = iota
	deliveredUnparsed
	skippedOutgoing
	dropped
)

// ringCounts are one Poll's counts for RingStats.
type ringCounts struct{ unparsed, outgoing, blocks uint64 }

// addRingCounts adds one Poll's counts to the device's.
func (d *Device) addRingCounts(c *ringCounts) {
	if c.unparsed != 0 {
		d.ext.unparsed.Add(c.unparsed)
	}
	if c.outgoing != 0 {
		d.ext.outgoing.Add(c.outgoing)
	}
	if c.blocks != 0 {
		d.ext.blocks.Add(c.blocks)
	}
}

// releaseBlock hands the block at base back to the kernel, every frame of
// it copied out, and moves to the next.
func (d *Device) releaseBlock(base int) {
	ring.Store32(d.rx, base+bdStatus, unix.TP_STATUS_KERNEL)
	d.rxBlk++
	if d.rxBlk == d.g.blockCount {
		d.rxBlk = 0
	}
}

// frame copies the frame whose tpacket3_hdr is at blk[off:] into a new
// buffer, for the handler, and says what became of it (delivered or
// deliveredUnparsed: b is the handler's to get).
func (d *Device) frame(blk []byte, off int) (*skb.Buff, int) {
	hdr := blk[off : off+hSize : off+hSize]
	snap := int(ne.Uint32(hdr[hSnaplen:]))
	wire := int(ne.Uint32(hdr[hLen:]))
	mac := int(ne.Uint16(hdr[hMac:]))
	status := ne.Uint32(hdr[hStatus:])
	if blk[off+sllPkttype] == unix.PACKET_OUTGOING && !d.cfg.Outgoing {
		return nil, skippedOutgoing
	}
	if snap < wire {
		d.ctr.RxDrop(netdev.DropTruncated, 1)
		return nil, dropped
	}
	start := off + mac
	if mac < sllEnd || start+snap > len(blk) {
		d.ctr.RxDrop(netdev.DropMalformed, 1)
		return nil, dropped
	}
	src := blk[start : start+snap]
	vlan := status&unix.TP_STATUS_VLAN_VALID != 0 && snap >= 12
	n := snap
	if vlan {
		n += header.VLANTagLen
	}
	size := n
	if n >= d.cbreak {
		size = max(n, d.fullSize)
	}
	b, err := d.cache.Alloc(size + d.extraHR)
	if err != nil {
		if err == skb.ErrTooBig {
			d.ctr.RxDrop(netdev.DropTooBig, 1)
		} else {
			d.ctr.RxDrop(netdev.DropNoBuffer, 1)
		}
		return nil, dropped
	}
	if d.extraHR != 0 {
		b.Reserve(d.extraHR)
	}
	dst := b.Put(n)
	if vlan {
		// The kernel moved the tag into the skb (vlan offload): put it
		// back where it was on the wire.
		tpid := uint16(header.EtherTypeVLAN)
		if status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			if t := ne.Uint16(hdr[hVlanTP:]); t != 0 {
				tpid = t
			}
		}
		copy(dst, src[:12])
		binary.BigEndian.PutUint16(dst[12:], tpid)
		binary.BigEndian.PutUint16(dst[14:], uint16(ne.Uint32(hdr[hVlanTCI:])))
		copy(dst[16:], src[12:])
	} else {
		copy(dst, src)
	}
	b.ResetMacHeader()
	f := &d.parsed
	perr := header.ParseFrameInto(dst, f)
	if perr != nil && d.cfg.DropMalformed {
		d.cache.Free(b)
		d.ctr.RxDrop(netdev.DropMalformed, 1)
		return nil, dropped
	}
	if f.NetworkOffset != 0 {
		b.SetNetworkHeader(f.NetworkOffset)
		b.SetProtocol(f.EtherType)
	}
	if f.TransportOffset != 0 {
		b.SetTransportHeader(f.TransportOffset)
	}
	segs := 1 // of a GSO super-frame (VnetHdr)
	if d.cfg.VnetHdr && start-vnetHdrLen >= off+hSize {
		tagLen := 0 // the VLAN tag put back, which the kernel's offsets do not count
		if vlan {
			tagLen = header.VLANTagLen
		}
		d.vnetGSO(b, blk[start-vnetHdrLen:start], f, tagLen)
		segs = b.GSOSegs()
	}
	switch {
	case status&unix.TP_STATUS_CSUMNOTREADY != 0 && f.PayloadOffset != 0 && !f.Fragment:
		switch f.Protocol {
		case header.IPProtoUDP:
			_ = b.SetChecksumPartial(f.TransportOffset, 6)
		case header.IPProtoTCP:
			_ = b.SetChecksumPartial(f.TransportOffset, 16)
		}
	case status&unix.TP_STATUS_CSUM_VALID != 0:
		b.SetChecksumUnnecessary()
	}
	b.SetTstamp(int64(ne.Uint32(hdr[hSec:]))*1e9 + int64(ne.Uint32(hdr[hNsec:])))
	if d.cfg.Queue != 0 {
		b.SetQueueMapping(d.cfg.Queue)
	}
	if segs > 1 {
		d.ctr.RxSuper(segs, n) // its segments, as netdev.Stats counts one
	} else {
		d.ctr.RxPacket(n)
	}
	if n < d.cbreak {
		d.ctr.RxCopybreak()
	}
	if perr != nil {
		return b, deliveredUnparsed
	}
	return b, delivered
}

// vnetGSO sets b's GSO fields from the virtio_net_hdr v that the kernel put
// before its frame (Config.VnetHdr), when it describes a GSO super-frame
// whose payload f found: gso_size, the segments the payload makes, and the
// type. A header of another GSO type (UFO, which no current kernel makes),
// with gso_size 0, or that describes other headers than f parsed (a
// tunnel's inner TCP or UDP, which the header names with the outer frame's
// type: its checksum starts at the inner transport header, tagLen bytes
// less than in b when a VLAN tag was put back), leaves b a plain frame.
func (d *Device) vnetGSO(b *skb.Buff, v []byte, f *header.Frame, tagLen int) {
	t := v[vnetGSOType]
	if t == 0 || f.PayloadOffset == 0 {
		return
	}
	if v[vnetFlags]&vnetNeedsCsum != 0 && int(ne.Uint16(v[vnetCsumStart:]))+tagLen != f.TransportOffset {
		return
	}
	size := int(ne.Uint16(v[vnetGSOSize:]))
	var typ skb.GSOType
	switch t &^ vnetGSOECN {
	case vnetGSOUDPL4:
		typ = skb.GSOUDPL4
		if f.Protocol != header.IPProtoUDP {
			return
		}
	case vnetGSOTCPv4:
		typ = skb.GSOTCPv4
		if f.Protocol != header.IPProtoTCP || f.EtherType != header.EtherTypeIPv4 {
			return
		}
	case vnetGSOTCPv6:
		typ = skb.GSOTCPv6
		if f.Protocol != header.IPProtoTCP || f.EtherType != header.EtherTypeIPv6 {
			return
		}
	default:
		return
	}
	if t&vnetGSOECN != 0 {
		typ |= skb.GSOTCPECN
	}
	payload := b.Len() - f.PayloadOffset
	if size == 0 || payload <= 0 {
		return
	}
	b.SetGSO(size, min((payload+size-1)/size, 0xffff), typ)
}
