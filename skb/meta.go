package skb

import "fmt"

// Header offsets are kept from head (plus one, zero meaning unset), so Push,
// Pull and Put do not move them; ExpandHead and the copies shift them with the
// data. The accessors below take and give offsets relative to data, as the
// kernel's skb_set_*_header and skb_*_offset do.

func (b *Buff) setHeader(h *uint32, off int) {
	b.checkLive()
	p := int(b.data) + off
	if p < 0 || p > int(b.end) {
		panic(fmt.Sprintf("skb: header offset %d outside the block: %s", off, b.geometry()))
	}
	*h = uint32(p) + 1
}

func (b *Buff) headerBytes(h uint32) []byte {
	b.checkLive()
	if h == 0 || h-1 > b.tail {
		return nil
	}
	return b.head[h-1 : b.tail : b.tail]
}

func (b *Buff) headerOffset(h uint32) int {
	b.checkLive()
	return int(h) - 1 - int(b.data)
}

// meta returns b's metadata, for the accessors: b must be live.
func (b *Buff) meta() *meta {
	b.checkLive()
	return &b.m
}

// resetHeader sets the header offset h to the start of the data.
func (b *Buff) resetHeader(h *uint32) {
	b.checkLive()
	*h = b.data + 1
}

// headerSet reports whether the header offset h is set.
func (b *Buff) headerSet(h uint32) bool {
	b.checkLive()
	return h != 0
}

// ResetMacHeader marks the start of the data as the mac (L2) header
// (skb_reset_mac_header).
func (b *Buff) ResetMacHeader() { b.resetHeader(&b.m.macHeader) }

// SetMacHeader marks the mac header off bytes after the start of the data; off
// may be negative (skb_set_mac_header). It panics outside the block.
func (b *Buff) SetMacHeader(off int) { b.setHeader(&b.m.macHeader, off) }

// MacHeaderWasSet reports whether a mac header offset is set
// (skb_mac_header_was_set).
func (b *Buff) MacHeaderWasSet() bool { return b.headerSet(b.m.macHeader) }

// MacOffset returns the mac header's offset from the start of the data, in
// bytes, negative once the header was pulled (skb_mac_offset). It is
// meaningless when MacHeaderWasSet is false.
func (b *Buff) MacOffset() int { return b.headerOffset(b.m.macHeader) }

// MacHeader returns the linear bytes from the mac header to the tail, or nil
// when it is unset or past the tail. The slice aliases b and is valid until b
// is changed, unshared or freed.
func (b *Buff) MacHeader() []byte { return b.headerBytes(b.m.macHeader) }

// MacLen returns the bytes from the mac header to the network header
// (skb_mac_header_len), 0 when either is unset.
func (b *Buff) MacLen() int {
	b.checkLive()
	if b.m.macHeader == 0 || b.m.netHeader == 0 {
		return 0
	}
	return int(b.m.netHeader) - int(b.m.macHeader)
}

// ResetNetworkHeader marks the start of the data as the network (L3) header
// (skb_reset_network_header).
func (b *Buff) ResetNetworkHeader() { b.resetHeader(&b.m.netHeader) }

// SetNetworkHeader marks the network header off bytes after the start of the
// data (skb_set_network_header). It panics outside the block.
func (b *Buff) SetNetworkHeader(off int) { b.setHeader(&b.m.netHeader, off) }

// NetworkHeaderWasSet reports whether a network header offset is set.
func (b *Buff) NetworkHeaderWasSet() bool { return b.headerSet(b.m.netHeader) }

// NetworkOffset returns the network header's offset from the start of the
// data, in bytes (skb_network_offset).
func (b *Buff) NetworkOffset() int { return b.headerOffset(b.m.netHeader) }

// NetworkHeader returns the linear bytes from the network header to the tail,
// or nil when it is unset. The slice aliases b and is valid until b is
// changed, unshared or freed.
func (b *Buff) NetworkHeader() []byte { return b.headerBytes(b.m.netHeader) }

// ResetTransportHeader marks the start of the data as the transport (L4)
// header (skb_reset_transport_header).
func (b *Buff) ResetTransportHeader() { b.resetHeader(&b.m.transHeader) }

// SetTransportHeader marks the transport header off bytes after the start of
// the data (skb_set_transport_header). It panics outside the block.
func (b *Buff) SetTransportHeader(off int) { b.setHeader(&b.m.transHeader, off) }

// TransportHeaderWasSet reports whether a transport header offset is set
// (skb_transport_header_was_set).
func (b *Buff) TransportHeaderWasSet() bool { return b.headerSet(b.m.transHeader) }

// TransportOffset returns the transport header's offset from the start of the
// data, in bytes (skb_transport_offset).
func (b *Buff) TransportOffset() int { return b.headerOffset(b.m.transHeader) }

// TransportHeader returns the linear bytes from the transport header to the
// tail, or nil when it is unset. The slice aliases b and is valid until b is
// changed, unshared or freed.
func (b *Buff) TransportHeader() []byte { return b.headerBytes(b.m.transHeader) }

// IPSummed returns the checksum state (ip_summed).
func (b *Buff) IPSummed() CsumState { return b.meta().ipSummed }

// SetChecksumNone sets the state to ChecksumNone.
func (b *Buff) SetChecksumNone() { b.meta().ipSummed = ChecksumNone }

// SetChecksumUnnecessary records that the checksum was verified
// (CHECKSUM_UNNECESSARY).
func (b *Buff) SetChecksumUnnecessary() { b.meta().ipSummed = ChecksumUnnecessary }

// SetChecksumComplete records sum, the 32-bit ones' complement sum (not folded,
// not inverted) of the bytes from the start of the data to the end
// (CHECKSUM_COMPLETE).
func (b *Buff) SetChecksumComplete(sum uint32) {
	b.checkLive()
	b.m.ipSummed = ChecksumComplete
	b.m.csum = sum
}

// Csum returns the sum recorded by SetChecksumComplete.
func (b *Buff) Csum() uint32 { return b.meta().csum }

// SetChecksumPartial asks for the checksum of the bytes from start (relative to
// the data) to the end to be stored at start+offset (CHECKSUM_PARTIAL,
// skb_partial_csum_set). The two-byte field must lie in the linear data. It
// returns ErrRange otherwise, since both numbers may come from the wire
// (virtio_net_hdr csum_start and csum_offset).
func (b *Buff) SetChecksumPartial(start, offset int) error {
	b.checkLive()
	hl := b.HeadLen()
	if start < 0 || offset < 0 || start > hl-2 || start+offset > hl-2 || offset > 0xffff {
		return ErrRange
	}
	b.m.ipSummed = ChecksumPartial
	b.m.csumStart = b.data + uint32(start)
	b.m.csumOffset = uint16(offset)
	return nil
}

// CsumStart returns where checksumming starts, relative to the data
// (skb_checksum_start_offset). Meaningful for ChecksumPartial.
func (b *Buff) CsumStart() int {
	b.checkLive()
	return int(b.m.csumStart) - int(b.data)
}

// CsumOffset returns where, from CsumStart, the checksum is stored.
// Meaningful for ChecksumPartial.
func (b *Buff) CsumOffset() int {
	b.checkLive()
	return int(b.m.csumOffset)
}

// Protocol returns the packet's EtherType in host byte order (skb->protocol,
// which the kernel keeps in network order), e.g. 0x0800 for IPv4.
func (b *Buff) Protocol() uint16 { return b.meta().protocol }

// SetProtocol sets the EtherType, in host byte order.
func (b *Buff) SetProtocol(p uint16) { b.meta().protocol = p }

// Priority returns the queueing priority (skb->priority, SO_PRIORITY).
func (b *Buff) Priority() uint32 { return b.meta().priority }

// SetPriority sets the queueing priority.
func (b *Buff) SetPriority(p uint32) { b.meta().priority = p }

// Mark returns the packet mark (skb->mark, SO_MARK).
func (b *Buff) Mark() uint32 { return b.meta().mark }

// SetMark sets the packet mark.
func (b *Buff) SetMark(m uint32) { b.meta().mark = m }

// Hash returns the flow hash and whether it covers the L4 ports (skb->hash,
// skb->l4_hash).
func (b *Buff) Hash() (hash uint32, l4 bool) {
	b.checkLive()
	return b.m.hash, b.m.l4Hash
}

// SetHash sets the flow hash; l4 says it covers the transport ports
// (skb_set_hash).
func (b *Buff) SetHash(hash uint32, l4 bool) {
	b.checkLive()
	b.m.hash, b.m.l4Hash = hash, l4
}

// QueueMapping returns the device queue the buffer was received on or will be
// sent on (skb_get_queue_mapping).
func (b *Buff) QueueMapping() int {
	b.checkLive()
	return int(b.m.queueMapping)
}

// SetQueueMapping sets the device queue (skb_set_queue_mapping). It panics if
// q does not fit in 16 bits.
func (b *Buff) SetQueueMapping(q int) {
	b.checkLive()
	if q < 0 || q > 0xffff {
		panic(fmt.Sprintf("skb: queue mapping %d out of range", q))
	}
	b.m.queueMapping = uint16(q)
}

// Tstamp returns the receive timestamp in nanoseconds since the Unix epoch
// (CLOCK_REALTIME, as SO_TIMESTAMPNS reports it), 0 when unset.
func (b *Buff) Tstamp() int64 { return b.meta().tstamp }

// SetTstamp sets the receive timestamp, in nanoseconds since the Unix epoch.
func (b *Buff) SetTstamp(ns int64) { b.meta().tstamp = ns }

// GSOSize returns the payload bytes per segment of a GSO buffer, 0 for a
// buffer that is one packet (gso_size).
func (b *Buff) GSOSize() int {
	b.checkLive()
	return int(b.shinfo.hot.gsoSize)
}

// GSOSegs returns the number of segments of a GSO buffer (gso_segs).
func (b *Buff) GSOSegs() int {
	b.checkLive()
	return int(b.shinfo.hot.gsoSegs)
}

// GSOType returns what segmentation a GSO buffer needs (gso_type).
func (b *Buff) GSOType() GSOType {
	b.checkLive()
	return b.shinfo.hot.gsoType
}

// IsGSO reports whether b is a GSO buffer (skb_is_gso).
func (b *Buff) IsGSO() bool {
	b.checkLive()
	return b.shinfo.hot.gsoSize != 0
}

// SetGSO sets the GSO parameters in the shared info: size payload bytes per
// segment, segs segments, of type t; size 0 clears all three (b is then no
// GSO buffer, whatever segs and t say). It panics if a value does not fit in
// 16 bits or b's data is shared.
func (b *Buff) SetGSO(size, segs int, t GSOType) {
	b.checkLive()
	if size < 0 || size > 0xffff || segs < 0 || segs > 0xffff {
		panic(fmt.Sprintf("skb: gso_size %d gso_segs %d out of range", size, segs))
	}
	b.writableShinfo("set gso")
	b.shClean = false
	if size == 0 {
		segs, t = 0, 0
	}
	h := &b.shinfo.hot
	h.gsoSize, h.gsoSegs, h.gsoType = uint16(size), uint16(segs), t
}

// SetDestructor sets fn to run exactly once, when the last buffer sharing b's
// data is freed; fn receives that buffer, whose data is still valid during the
// call: fn may read it (data, metadata, frags) but must not keep it, free
// it, clone it or reallocate its data (Free, Clone, and every call that
// would reallocate, such as ExpandHead or a PskbMayPull past the linear
// data, panic there). It replaces any earlier destructor; nil removes it. A transmit path
// uses it to learn of completion (seed 000: the driver frees the caller's
// buffer when the device is done with it). It panics on a cloned buffer,
// whose shared info the clones share, as SetGSO does, and inside the
// destructor itself (the block is going back to its pool, where a
// destructor set then would run on whichever buffer got the block next).
func (b *Buff) SetDestructor(fn func(*Buff)) {
	b.checkLive()
	if b.state == stateDying {
		panic("skb: SetDestructor on " + b.describe() + " inside its data's destructor")
	}
	b.writableShinfo("set destructor")
	b.shinfo.destructor = fn
	if fn != nil {
		b.markExtra()
	}
}
