package header

import (
	"encoding/binary"

	"github.com/skbdev/skb/skb"
)

// Frame is where ParseFrame or ParsePacket found each header, as offsets in
// bytes from the start of the slice parsed. The MAC header of a frame is at
// offset 0 (skb mac_header); ParsePacket's input has none. The zero value
// describes nothing.
//
// A driver sets a buffer's header offsets from it: network header at
// NetworkOffset, transport header at TransportOffset, protocol EtherType,
// and trims the buffer to End. Frame holds no reference to the bytes.
type Frame struct {
	// NetworkOffset is the offset of the network header (ARP, IPv4, IPv6),
	// after any VLAN tags: the kernel's skb network_header. It is 0 for
	// ParsePacket.
	NetworkOffset int

	// TransportOffset is the offset of the transport header (skb
	// transport_header): after the IPv4 options or the IPv6 extension
	// headers. It is 0 when there is none (not IP). In a non-first fragment
	// it is where the fragment's data starts.
	TransportOffset int

	// PayloadOffset is the offset of the transport payload, after a UDP,
	// TCP, ICMPv4 or ICMPv6 header that was parsed and checked. It is 0
	// when the transport header was not parsed: another protocol, or a
	// fragment.
	PayloadOffset int

	// End is the end of the network packet as its length fields give it
	// (IPv4 Total Length, IPv6 Payload Length, the ARP addresses); bytes
	// from End on are link padding or trailer. It is the length of the
	// input for an EtherType ParseFrame does not know. A UDP datagram may
	// end before End: its own Length field rules (see ParseUDP).
	End int

	// EtherType is the protocol of the network header, after any VLAN
	// tags (skb protocol): EtherType8022 or EtherType8023 for an IEEE
	// 802.3 frame, whose EtherType position holds a length (End is then
	// where that length ends; a length past the frame is ErrTruncated).
	// ParsePacket sets EtherTypeIPv4 or
	// EtherTypeIPv6 from the version.
	EtherType uint16

	// VLANProto is the EtherType that announced the outermost VLAN tag
	// (EtherTypeVLAN or EtherTypeQinQ; skb vlan_proto), 0 when untagged.
	VLANProto uint16

	// VLANTCI is the Tag Control Information of the outermost VLAN tag
	// (skb vlan_tci). Inner tags are skipped.
	VLANTCI uint16

	// Protocol is the transport protocol (IPv4 Protocol, or the last IPv6
	// Next Header after the extension headers), valid when TransportOffset
	// is not 0.
	Protocol uint8

	// Fragment reports an IPv4 or IPv6 fragment (not an atomic fragment).
	// Its transport header is neither parsed nor checked; reassembly
	// comes first.
	Fragment bool
}

// ParseFrame parses an Ethernet II frame (no frame check sequence) down to
// its transport header and returns the offsets of each header. It reads the
// Ethernet header, any number of 802.1Q/802.1ad VLAN tags, then for IPv4,
// IPv6 and ARP the network header, checked as ParseIPv4, ParseIPv6 (with
// SkipExtensionHeaders) and ParseARP do, and, unless the packet is a
// fragment, a UDP, TCP, ICMPv4 (over IPv4) or ICMPv6 (over IPv6) header,
// checked as ParseUDP, ParseTCP, ParseICMPv4 and ParseICMPv6 do. It stops
// without error at an EtherType or transport protocol it does not know.
//
// Every length is checked against the bytes present; on bad input it
// returns the Frame as far as it got and the *ParseError of the failing
// layer. It does not verify checksums (see Frame.VerifyChecksum). It does
// not keep b and does not allocate.
func ParseFrame(b []byte) (Frame, error) {
	var f Frame
	err := parseFrame(b, len(b), &f)
	return f, err
}

// ParseFrameInto is ParseFrame writing into *f, which must not be nil and
// which it clears first: for a per-packet loop that keeps one Frame, it
// spares copying the result (the copy of a Frame just written field by
// field stalls on store forwarding, a third of a receiver's parse time in
// the lab). It returns ParseFrame's error.
func ParseFrameInto(b []byte, f *Frame) error { return parseFrame(b, len(b), f) }

// parseFrame is ParseFrameInto for a frame of total bytes whose first bytes,
// b, hold every header: length fields are checked against total.
func parseFrame(b []byte, total int, f *Frame) error {
	*f = Frame{}
	if len(b) < EthernetHeaderLen {
		return short(EthernetHeaderLen, total, errEthernetShort)
	}
	et := binary.BigEndian.Uint16(b[12:14])
	off := EthernetHeaderLen
	for et == EtherTypeVLAN || et == EtherTypeQinQ {
		if len(b)-off < VLANTagLen {
			return short(off+VLANTagLen, total, errVLANShort)
		}
		if f.VLANProto == 0 {
			f.VLANProto, f.VLANTCI = et, binary.BigEndian.Uint16(b[off:off+2])
		}
		et = binary.BigEndian.Uint16(b[off+2 : off+4])
		off += VLANTagLen
	}
	f.EtherType, f.NetworkOffset, f.End = et, off, total
	if et < EtherTypeMin {
		// An IEEE 802.3 length: the protocol as eth_type_trans gives it,
		// and the frame's end at the length, before the padding, as the
		// LLC layer trims it (llc_fixup_skb).
		f.EtherType = EtherType8022
		switch {
		case len(b)-off >= 2:
			if b[off] == 0xff && b[off+1] == 0xff {
				f.EtherType = EtherType8023
			}
		case total-off >= 2:
			return errLinear // the two bytes that tell lie past the linear data
		}
		if off+int(et) > total {
			return err8023Length // as the LLC layer drops it (llc_fixup_skb)
		}
		f.End = off + int(et)
		return nil
	}
	switch et {
	case EtherTypeIPv4:
		return parseIPv4At(b, total, f)
	case EtherTypeIPv6:
		return parseIPv6At(b, total, f)
	case EtherTypeARP:
		n, err := checkARP(b[off:], total-off)
		if err != nil {
			return err
		}
		f.End = off + n
	}
	return nil
}

// ParsePacket is ParseFrame for a bare IP packet, as a TUN device without
// IFF_TAP delivers it: the version nibble chooses IPv4 or IPv6, and the
// network header is at offset 0. It returns a *ParseError wrapping
// ErrTruncated for an empty b and ErrBadVersion for a version other than 4
// or 6. It does not keep b and does not allocate.
func ParsePacket(b []byte) (Frame, error) { return parsePacket(b, len(b)) }

func parsePacket(b []byte, total int) (Frame, error) {
	var f Frame
	if len(b) == 0 {
		return f, short(1, total, errPacketEmpty)
	}
	f.End = total
	switch b[0] >> 4 {
	case IPv4Version:
		f.EtherType = EtherTypeIPv4
		return f, parseIPv4At(b, total, &f)
	case IPv6Version:
		f.EtherType = EtherTypeIPv6
		return f, parseIPv6At(b, total, &f)
	}
	return f, errPacketVersion
}

func parseIPv4At(b []byte, total int, f *Frame) error {
	hl, tl, err := checkIPv4(b[f.NetworkOffset:], total-f.NetworkOffset)
	if err != nil {
		return err
	}
	ip := IPv4(b[f.NetworkOffset:])
	f.End = f.NetworkOffset + tl
	f.TransportOffset = f.NetworkOffset + hl
	f.Protocol = ip.Protocol()
	if ip.IsFragment() {
		f.Fragment = true
		return nil
	}
	return parseTransport(b, f, false)
}

func parseIPv6At(b []byte, total int, f *Frame) error {
	n, err := checkIPv6(b[f.NetworkOffset:], total-f.NetworkOffset)
	if err != nil {
		return err
	}
	f.End = f.NetworkOffset + n
	proto, off, frag, err := skipExt(b[f.NetworkOffset:], n)
	if err != nil {
		return err
	}
	f.TransportOffset = f.NetworkOffset + off
	f.Protocol = proto
	if frag != nil && frag.IsFragment() {
		f.Fragment = true
		return nil
	}
	return parseTransport(b, f, true)
}

// parseTransport checks the transport header at f.TransportOffset of b,
// whose segment runs to f.End (possibly past len(b)).
func parseTransport(b []byte, f *Frame, v6 bool) error {
	seg := b[f.TransportOffset:min(f.End, len(b))]
	avail := f.End - f.TransportOffset
	var n int
	var err error
	switch {
	case f.Protocol == IPProtoUDP:
		_, err = checkUDP(seg, avail)
		n = UDPHeaderLen
	case f.Protocol == IPProtoTCP:
		n, err = checkTCP(seg, avail)
	case f.Protocol == IPProtoICMP && !v6:
		if len(seg) < ICMPv4HeaderLen {
			err = short(ICMPv4HeaderLen, avail, errICMPv4Short)
		}
		n = ICMPv4HeaderLen
	case f.Protocol == IPProtoICMPv6 && v6:
		if len(seg) < ICMPv6HeaderLen {
			err = short(ICMPv6HeaderLen, avail, errICMPv6Short)
		}
		n = ICMPv6HeaderLen
	default:
		return nil
	}
	if err != nil {
		return err
	}
	f.PayloadOffset = f.TransportOffset + n
	return nil
}

// VerifyChecksum checks the checksums of the frame or packet f was parsed
// from, which must be b unchanged: the IPv4 header checksum, and, when the
// transport header was parsed (PayloadOffset not 0), the UDP, TCP, ICMPv4 or
// ICMPv6 checksum with its pseudo-header, whose IPv6 destination is the
// final one (IPv6.FinalDestination: the last address of a Routing header
// with Segments Left above 0, RFC 8200 section 8.1). A UDP checksum of 0
// means "none" over IPv4 and passes; over IPv6 it fails (RFC 8200 section
// 8.1). It
// returns nil or a *ParseError wrapping ErrBadChecksum naming the layer, or
// one wrapping ErrTruncated when a header f describes does not fit b (f
// from a parse that failed, or from other bytes).
// It is the software equivalent of a device's CHECKSUM_UNNECESSARY. It
// does not allocate.
func (f *Frame) VerifyChecksum(b []byte) error { return f.verify(b, nil) }

// verify is VerifyChecksum over b, or, when buf is not nil, over buf, whose
// linear data b is.
func (f *Frame) verify(b []byte, buf *skb.Buff) error {
	if !f.fits(b, buf) {
		return errFrameFit
	}
	var pseudoAddrs uint16 // sum of both addresses
	switch f.EtherType {
	case EtherTypeIPv4:
		ip := IPv4(b[f.NetworkOffset:])
		if !ip.ChecksumValid() {
			return errIPv4Checksum
		}
		pseudoAddrs = pseudo4(ip[12:16], ip[16:20], 0, 0)
	case EtherTypeIPv6:
		no, t := f.NetworkOffset, f.TransportOffset
		ip := IPv6(b[no:])
		if f.PayloadOffset == 0 || t <= no+IPv6HeaderLen {
			pseudoAddrs = pseudo6(ip[8:24], ip[24:40], 0, 0)
		} else {
			// Extension headers: a Routing header may name
			// another final destination (fits checked t).
			d := IPv6(b[no:t]).FinalDestination()
			pseudoAddrs = pseudo6(ip[8:24], d[:], 0, 0)
		}
	default:
		return nil
	}
	if f.PayloadOffset == 0 {
		return nil
	}
	t := f.TransportOffset
	n := f.End - t
	var bad *ParseError
	switch f.Protocol {
	case IPProtoUDP:
		u := UDP(b[t:])
		if u.Checksum() == 0 {
			if f.EtherType == EtherTypeIPv6 {
				return errUDPChecksum
			}
			return nil
		}
		n, bad = int(u.Length()), errUDPChecksum
	case IPProtoTCP:
		bad = errTCPChecksum
	case IPProtoICMP:
		if sumRange(b, buf, t, n, 0) != 0xffff {
			return errICMPv4Checksum
		}
		return nil
	case IPProtoICMPv6:
		bad = errICMPv6Checksum
	default:
		return nil
	}
	// The rest of the pseudo-header: protocol and length.
	pseudo := ChecksumFold(uint64(pseudoAddrs) + uint64(f.Protocol) + uint64(n))
	if sumRange(b, buf, t, n, pseudo) != 0xffff {
		return bad
	}
	return nil
}

// fits reports whether every header verify reads lies within b (the
// linear data of buf, when buf is not nil) and the transport segment within
// the frame's End: true of a Frame parsed without error from these bytes,
// not always of one from a failed parse or other bytes.
func (f *Frame) fits(b []byte, buf *skb.Buff) bool {
	// Each bound is checked as a difference from len(b), so that a Frame
	// with huge offsets cannot overflow past it.
	no := f.NetworkOffset
	switch f.EtherType {
	case EtherTypeIPv4:
		if no < 0 || no > len(b)-IPv4MinHeaderLen || IPv4(b[no:]).HeaderLen() > len(b)-no {
			return false
		}
	case EtherTypeIPv6:
		if no < 0 || no > len(b)-IPv6HeaderLen {
			return false
		}
	default:
		return true
	}
	if f.PayloadOffset == 0 {
		return true
	}
	t, end := f.TransportOffset, len(b)
	if buf != nil {
		end = buf.Len()
	}
	if t < no || f.PayloadOffset > len(b) || t > len(b)-UDPHeaderLen || f.End > end || t > f.End {
		return false
	}
	return f.Protocol != IPProtoUDP || int(UDP(b[t:]).Length()) <= f.End-t
}

// sumRange returns Checksum of n bytes from off in b, or in buf when it is
// not nil.
func sumRange(b []byte, buf *skb.Buff, off, n int, initial uint16) uint16 {
	if buf != nil {
		s, _ := sumBuff(buf, off, n, initial, 0)
		return s
	}
	return Checksum(b[off:off+n], initial)
}
