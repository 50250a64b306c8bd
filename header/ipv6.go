package header

import (
	"encoding/binary"
	"net/netip"
)

// IPv6 constants, RFC 8200.
const (
	IPv6Version           = 6  // the Version field of every IPv6 header
	IPv6HeaderLen         = 40 // the fixed header
	IPv6FragmentHeaderLen = 8  // the Fragment extension header, RFC 8200 section 4.5

	// IPv6MinMTU is the smallest link MTU IPv6 allows, RFC 8200 section 5.
	IPv6MinMTU = 1280
)

// IPv6 is a view of an IPv6 packet (RFC 8200) starting at its fixed header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version| Traffic Class |              Flow Label               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Payload Length        |  Next Header  |   Hop Limit   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                                                               +
//	|                     Source Address (16 bytes)                 |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                                                               +
//	|                  Destination Address (16 bytes)               |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Payload Length counts the bytes after the fixed header, extension
// headers included. Jumbograms (RFC 2675, Payload Length 0 with a
// Hop-by-Hop Jumbo Payload option) are not supported: a Payload Length of 0
// means an empty payload. The Traffic Class holds the DSCP (upper 6 bits)
// and ECN (lower 2).
//
// A view does not copy. Its methods assume IPv6HeaderLen bytes, and Payload
// and SkipExtensionHeaders the Payload Length too, as ParseIPv6 checks.
type IPv6 []byte

// IPv6Fields holds the fields IPv6.Encode writes.
type IPv6Fields struct {
	TrafficClass uint8      // DSCP<<2 | ECN
	FlowLabel    uint32     // low 20 bits used
	PayloadLen   uint16     // bytes after the fixed header
	NextHeader   uint8      // such as IPProtoUDP
	HopLimit     uint8      // hops
	Source       netip.Addr // must be an IPv6 address (IPv4-mapped allowed)
	Destination  netip.Addr // must be an IPv6 address (IPv4-mapped allowed)
}

// ParseIPv6 checks b the way the kernel's ipv6_rcv does and returns it as an
// IPv6 view trimmed to 40 + Payload Length bytes (bytes after, such as
// Ethernet padding, are dropped). It returns a *ParseError wrapping
// ErrTruncated when b is shorter than 40 bytes or than 40 + Payload Length,
// and one wrapping ErrBadVersion when the version is not 6. It does not walk
// the extension headers (see SkipExtensionHeaders). The returned view
// aliases b. It does not allocate.
func ParseIPv6(b []byte) (IPv6, error) {
	n, err := checkIPv6(b, len(b))
	if err != nil {
		return nil, err
	}
	return IPv6(b[:n]), nil
}

// checkIPv6 makes ParseIPv6's checks on b, the first bytes of a packet of
// avail bytes in all: the fixed header must lie in b, the payload in avail.
// It returns the packet length, 40 + Payload Length.
func checkIPv6(b []byte, avail int) (int, error) {
	if len(b) < IPv6HeaderLen {
		return 0, short(IPv6HeaderLen, avail, errIPv6Short)
	}
	if b[0]>>4 != IPv6Version {
		return 0, errIPv6Version
	}
	n := IPv6HeaderLen + int(binary.BigEndian.Uint16(b[4:6]))
	if avail < n {
		return 0, errIPv6Payload
	}
	return n, nil
}

// Version returns the 4-bit version field.
func (h IPv6) Version() uint8 { return h[0] >> 4 }

// TrafficClass returns the 8-bit Traffic Class.
func (h IPv6) TrafficClass() uint8 { return uint8(binary.BigEndian.Uint16(h[0:2]) >> 4) }

// FlowLabel returns the 20-bit Flow Label (RFC 6437).
func (h IPv6) FlowLabel() uint32 { return binary.BigEndian.Uint32(h[0:4]) & 0x000fffff }

// PayloadLen returns the Payload Length field, in bytes.
func (h IPv6) PayloadLen() uint16 { return binary.BigEndian.Uint16(h[4:6]) }

// NextHeader returns the Next Header field: the first extension header or
// the transport protocol.
func (h IPv6) NextHeader() uint8 { return h[6] }

// HopLimit returns the Hop Limit field.
func (h IPv6) HopLimit() uint8 { return h[7] }

// Source returns the source address. It does not allocate.
func (h IPv6) Source() netip.Addr { return netip.AddrFrom16([16]byte(h[8:24])) }

// Destination returns the destination address. It does not allocate.
func (h IPv6) Destination() netip.Addr { return netip.AddrFrom16([16]byte(h[24:40])) }

// Payload returns the Payload Length bytes after the fixed header. The
// returned slice aliases h.
func (h IPv6) Payload() []byte { return h[IPv6HeaderLen : IPv6HeaderLen+int(h.PayloadLen())] }

// SetTrafficClass writes the Traffic Class and version 6.
func (h IPv6) SetTrafficClass(tc uint8) {
	v := binary.BigEndian.Uint16(h[0:2])
	binary.BigEndian.PutUint16(h[0:2], IPv6Version<<12|uint16(tc)<<4|v&0x000f)
}

// SetFlowLabel writes the low 20 bits of fl as the Flow Label.
func (h IPv6) SetFlowLabel(fl uint32) {
	v := binary.BigEndian.Uint32(h[0:4])
	binary.BigEndian.PutUint32(h[0:4], v&0xfff00000|fl&0x000fffff)
}

// SetPayloadLen writes the Payload Length field.
func (h IPv6) SetPayloadLen(n uint16) { binary.BigEndian.PutUint16(h[4:6], n) }

// SetNextHeader writes the Next Header field.
func (h IPv6) SetNextHeader(p uint8) { h[6] = p }

// SetHopLimit writes the Hop Limit field.
func (h IPv6) SetHopLimit(n uint8) { h[7] = n }

// SetSource writes the source address; an IPv4 address is written
// IPv4-mapped (netip.Addr.As16).
func (h IPv6) SetSource(a netip.Addr) { a16 := a.As16(); copy(h[8:24], a16[:]) }

// SetDestination writes the destination address, as SetSource.
func (h IPv6) SetDestination(a netip.Addr) { a16 := a.As16(); copy(h[24:40], a16[:]) }

// PseudoHeaderChecksum returns PseudoHeaderChecksumIPv6 for h's source and
// final destination (FinalDestination: the Destination field unless a
// Routing header in h routes the packet further), with the upper-layer
// protocol and the upper-layer length in bytes (after the extension
// headers).
func (h IPv6) PseudoHeaderChecksum(proto uint8, length uint32) uint16 {
	if !mayRoute(h) {
		return pseudo6(h[8:24], h[24:40], proto, length)
	}
	d := h.FinalDestination()
	return pseudo6(h[8:24], d[:], proto, length)
}

// mayRoute reports whether h's first Next Header is one FinalDestination
// walks (so that the common packet, with none, is not walked).
func mayRoute(h IPv6) bool {
	switch h[6] {
	case IPProtoHopByHop, IPProtoDstOpts, IPProtoRouting, IPProtoAH, IPProtoFragment:
		return len(h) > IPv6HeaderLen
	}
	return false
}

// FinalDestination returns the packet's final destination: the address an
// upper-layer checksum's pseudo-header holds (RFC 8200 section 8.1). It is
// the Destination field, unless a Routing header found by walking the
// extension headers (as SkipExtensionHeaders walks them, within h and the
// Payload Length) has Segments Left above 0; then it is the last address
// of the route:
//
//   - type 0 (RFC 5095 deprecates it, RFC 2460 section 4.4): its last
//     address;
//   - type 2, Mobile IPv6 (RFC 6275 section 6.4): its one address, the
//     home address;
//   - type 3, RPL (RFC 6554 section 3): its last address, whose first
//     CmprE bytes, elided, are the Destination field's;
//   - type 4, segment routing (RFC 8754 section 2): Segment List[0].
//
// A Routing header of another type, or one too short for the addresses
// its fields announce, leaves the Destination field. h must hold at least
// the fixed header. It does not allocate.
func (h IPv6) FinalDestination() [16]byte {
	var d [16]byte
	copy(d[:], h[24:40])
	end := min(len(h), IPv6HeaderLen+int(h.PayloadLen()))
	proto, off := h[6], IPv6HeaderLen
	for end-off >= 2 {
		var n int
		switch proto {
		case IPProtoHopByHop, IPProtoDstOpts, IPProtoRouting:
			n = (int(h[off+1]) + 1) * 8
		case IPProtoAH:
			n = (int(h[off+1]) + 2) * 4
		case IPProtoFragment:
			n = IPv6FragmentHeaderLen
			if end-off >= n && IPv6Fragment(h[off:off+n]).FragmentOffset() != 0 {
				return d
			}
		default:
			return d
		}
		if end-off < n {
			return d
		}
		if proto == IPProtoRouting {
			routeEnd(h[off:off+n], &d)
			return d
		}
		proto, off = h[off], off+n
	}
	return d
}

// routeEnd writes into d, which holds the Destination field, the last
// address of the Routing header r when its Segments Left is above 0 (see
// FinalDestination).
func routeEnd(r []byte, d *[16]byte) {
	if len(r) < 8 || r[3] == 0 {
		return
	}
	switch r[2] {
	case IPv6RoutingType0:
		if k := (len(r) - 8) / 16; k > 0 {
			copy(d[:], r[8+16*(k-1):])
		}
	case IPv6RoutingType2, IPv6RoutingSegments:
		if len(r) >= 24 {
			copy(d[:], r[8:24])
		}
	case IPv6RoutingRPL:
		// n = (Hdr Ext Len*8 - Pad - (16-CmprE)) / (16-CmprI) + 1
		// addresses: n-1 of 16-CmprI bytes, then the last of 16-CmprE.
		cmprI, cmprE, pad := int(r[4]>>4), int(r[4]&0x0f), int(r[5]>>4)
		room := int(r[1])*8 - pad - (16 - cmprE)
		if room < 0 || room%(16-cmprI) != 0 {
			return
		}
		at := 8 + room
		if at+16-cmprE > len(r)-pad {
			return
		}
		copy(d[cmprE:], r[at:at+16-cmprE])
	}
}

// Encode writes the fixed header f describes into h[:IPv6HeaderLen]. It
// panics when an address is not IPv6 (an IPv4 address, which has an
// IPv4-mapped form, or the zero Addr: programming errors). It does not
// allocate.
func (h IPv6) Encode(f *IPv6Fields) {
	if p := addrFault(f.Source, false); p != "" {
		panic("header: IPv6.Encode: Source is " + p)
	}
	if p := addrFault(f.Destination, false); p != "" {
		panic("header: IPv6.Encode: Destination is " + p)
	}
	_ = h[IPv6HeaderLen-1]
	binary.BigEndian.PutUint32(h[0:4], IPv6Version<<28|uint32(f.TrafficClass)<<20|f.FlowLabel&0x000fffff)
	binary.BigEndian.PutUint16(h[4:6], f.PayloadLen)
	h[6] = f.NextHeader
	h[7] = f.HopLimit
	src, dst := f.Source.As16(), f.Destination.As16()
	copy(h[8:24], src[:])
	copy(h[24:40], dst[:])
}

// SkipExtensionHeaders walks the extension headers after the fixed header
// and returns the upper-layer protocol, the offset of its header from the
// start of h, and the Fragment header when there is one (nil otherwise). It
// follows the kernel's ipv6_skip_exthdr: it steps over Hop-by-Hop Options,
// Routing and Destination Options (length (Hdr Ext Len+1)*8, RFC 8200
// section 4), Fragment (8 bytes) and Authentication (length (Payload
// Len+2)*4, RFC 4302) headers, and stops at any other Next Header, returned
// as proto: a transport protocol, IPProtoNoNext or IPProtoESP (whose
// payload is opaque).
//
// At a Fragment header whose offset is not zero it stops after that header:
// the rest is the middle of a packet and proto is the fragment's Next Header.
// A first fragment (offset 0) is walked on. Of several Fragment headers the
// first that makes a fragment (offset or M not zero) is returned: an atomic
// one after it (RFC 6946) does not make the packet whole.
//
// It returns a *ParseError wrapping ErrTruncated when a header runs past
// the Payload Length, or ErrBadExtensionHeader when a Hop-by-Hop Options
// header is not the first (RFC 8200 section 4.1). The returned fragment
// view aliases h. It does not allocate.
func (h IPv6) SkipExtensionHeaders() (proto uint8, off int, frag IPv6Fragment, err error) {
	end := IPv6HeaderLen + int(h.PayloadLen())
	if end > len(h) {
		return 0, 0, nil, errIPv6Payload
	}
	return skipExt(h, end)
}

// skipExt is SkipExtensionHeaders for a packet that ends at end, of which h
// holds the first bytes (at least the fixed header): the extension headers
// must lie in h.
func skipExt(h []byte, end int) (proto uint8, off int, frag IPv6Fragment, err error) {
	lim := min(end, len(h))
	// past returns the error for a header that would end at need > lim.
	past := func(need int) error {
		if need <= end {
			return errLinear
		}
		return errIPv6ExtShort
	}
	proto, off = h[6], IPv6HeaderLen
	for {
		var n int
		switch proto {
		case IPProtoHopByHop, IPProtoRouting, IPProtoDstOpts:
			if proto == IPProtoHopByHop && off != IPv6HeaderLen {
				return 0, 0, nil, errIPv6HopByHop
			}
			if lim-off < 2 {
				return 0, 0, nil, past(off + 2)
			}
			n = (int(h[off+1]) + 1) * 8
		case IPProtoAH:
			if lim-off < 2 {
				return 0, 0, nil, past(off + 2)
			}
			n = (int(h[off+1]) + 2) * 4
		case IPProtoFragment:
			if lim-off < IPv6FragmentHeaderLen {
				return 0, 0, nil, past(off + IPv6FragmentHeaderLen)
			}
			this := IPv6Fragment(h[off : off+IPv6FragmentHeaderLen])
			if frag == nil || !frag.IsFragment() {
				// A later Fragment header does not make a fragment
				// whole: the first real one stays the packet's.
				frag = this
			}
			proto, off = this.NextHeader(), off+IPv6FragmentHeaderLen
			if this.FragmentOffset() != 0 {
				return proto, off, frag, nil
			}
			continue
		default:
			return proto, off, frag, nil
		}
		if lim-off < n {
			return 0, 0, nil, past(off + n)
		}
		proto, off = h[off], off+n
	}
}

// IPv6Fragment is a view of an IPv6 Fragment extension header (RFC 8200
// section 4.5):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Next Header  |   Reserved    |      Fragment Offset    |Res|M|
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Identification                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Fragment Offset counts 8-byte units. Its methods assume
// IPv6FragmentHeaderLen bytes.
type IPv6Fragment []byte

// NextHeader returns the protocol of the fragmentable part.
func (h IPv6Fragment) NextHeader() uint8 { return h[0] }

// FragmentOffset returns the offset in bytes (the field times 8).
func (h IPv6Fragment) FragmentOffset() uint16 { return binary.BigEndian.Uint16(h[2:4]) &^ 7 }

// MoreFragments returns the M flag.
func (h IPv6Fragment) MoreFragments() bool { return h[3]&1 != 0 }

// ID returns the Identification field.
func (h IPv6Fragment) ID() uint32 { return binary.BigEndian.Uint32(h[4:8]) }

// IsFragment reports whether h makes its packet a real fragment: offset or M
// not zero. An "atomic fragment" (both zero, RFC 6946) is a whole packet.
func (h IPv6Fragment) IsFragment() bool { return binary.BigEndian.Uint16(h[2:4])&^6 != 0 }

// IPv6FragmentFields holds the fields IPv6Fragment.Encode writes.
type IPv6FragmentFields struct {
	NextHeader     uint8  // protocol of the fragmentable part, such as IPProtoUDP
	FragmentOffset uint16 // in bytes, a multiple of 8 (the low 3 bits are dropped)
	MoreFragments  bool   // the M flag
	ID             uint32 // Identification
}

// ParseIPv6Fragment checks that b holds a Fragment header and returns it as
// an IPv6Fragment view of its 8 bytes. It returns a *ParseError wrapping
// ErrTruncated when b is shorter. It does not allocate.
func ParseIPv6Fragment(b []byte) (IPv6Fragment, error) {
	if len(b) < IPv6FragmentHeaderLen {
		return nil, errIPv6FragShort
	}
	return IPv6Fragment(b[:IPv6FragmentHeaderLen]), nil
}

// Encode writes the header f describes into h[:IPv6FragmentHeaderLen],
// the reserved fields zero. It does not allocate.
func (h IPv6Fragment) Encode(f *IPv6FragmentFields) {
	_ = h[IPv6FragmentHeaderLen-1]
	h[0], h[1] = f.NextHeader, 0
	binary.BigEndian.PutUint16(h[2:4], f.FragmentOffset&^7)
	h.SetMoreFragments(f.MoreFragments)
	binary.BigEndian.PutUint32(h[4:8], f.ID)
}

// SetNextHeader writes the Next Header field.
func (h IPv6Fragment) SetNextHeader(p uint8) { h[0] = p }

// SetFragmentOffset writes the offset, in bytes (a multiple of 8; the low 3
// bits are dropped), keeping the M flag.
func (h IPv6Fragment) SetFragmentOffset(off uint16) {
	binary.BigEndian.PutUint16(h[2:4], off&^7|binary.BigEndian.Uint16(h[2:4])&1)
}

// SetMoreFragments writes the M flag.
func (h IPv6Fragment) SetMoreFragments(m bool) {
	if m {
		h[3] |= 1
	} else {
		h[3] &^= 1
	}
}

// SetID writes the Identification field.
func (h IPv6Fragment) SetID(id uint32) { binary.BigEndian.PutUint32(h[4:8], id) }
