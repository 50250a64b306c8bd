package header

import (
	"encoding/binary"
	"net/netip"
)

// IP protocol numbers (the IPv4 Protocol and IPv6 Next Header field), from
// the IANA "protocol-numbers" registry; the RFC defining each is named.
const (
	IPProtoHopByHop uint8 = 0   // IPv6 Hop-by-Hop Options, RFC 8200 section 4.3
	IPProtoICMP     uint8 = 1   // ICMP for IPv4, RFC 792
	IPProtoIPIP     uint8 = 4   // IPv4 in IPv4, RFC 2003
	IPProtoTCP      uint8 = 6   // TCP, RFC 9293
	IPProtoUDP      uint8 = 17  // UDP, RFC 768
	IPProtoIPv6     uint8 = 41  // IPv6 encapsulation, RFC 2473
	IPProtoRouting  uint8 = 43  // IPv6 Routing header, RFC 8200 section 4.4
	IPProtoFragment uint8 = 44  // IPv6 Fragment header, RFC 8200 section 4.5
	IPProtoGRE      uint8 = 47  // Generic Routing Encapsulation, RFC 2784
	IPProtoESP      uint8 = 50  // Encapsulating Security Payload, RFC 4303
	IPProtoAH       uint8 = 51  // Authentication Header, RFC 4302
	IPProtoICMPv6   uint8 = 58  // ICMP for IPv6, RFC 4443
	IPProtoNoNext   uint8 = 59  // IPv6 No Next Header, RFC 8200 section 4.7
	IPProtoDstOpts  uint8 = 60  // IPv6 Destination Options, RFC 8200 section 4.6
	IPProtoSCTP     uint8 = 132 // SCTP, RFC 9260
	IPProtoUDPLite  uint8 = 136 // UDP-Lite, RFC 3828
	IPProtoReserved uint8 = 255 // reserved, never on the wire
)

// IPv4 constants, RFC 791.
const (
	IPv4Version      = 4     // the Version field of every IPv4 header
	IPv4MinHeaderLen = 20    // header without options, IHL 5
	IPv4MaxHeaderLen = 60    // IHL 15, 40 bytes of options
	IPv4MaxTotalLen  = 65535 // the largest Total Length

	// Flags, the top 3 bits of bytes 6-7, as IPv4.Flags returns them.
	IPv4FlagMoreFragments uint8 = 1 // MF
	IPv4FlagDontFragment  uint8 = 2 // DF
	IPv4FlagReserved      uint8 = 4 // must be zero (RFC 791)

	// Option types (the whole type octet, copied flag included), RFC 791
	// section 3.1. Options share their TLV layout with TCP's.
	IPv4OptionEnd uint8 = 0 // end of option list
	IPv4OptionNOP uint8 = 1 // no operation (padding)
)

// IPv4 is a view of an IPv4 packet (RFC 791) starting at its header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Version|  IHL  |Type of Service|          Total Length         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Identification        |Flags|     Fragment Offset     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Time to Live |    Protocol   |        Header Checksum        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Source Address                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Destination Address                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Options (IHL*4 - 20 bytes)                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// IHL counts 32-bit words (5 to 15); Total Length counts bytes, header
// included; Fragment Offset counts 8-byte units. The Type of Service byte
// holds the DSCP (upper 6 bits, RFC 2474) and ECN (lower 2, RFC 3168).
//
// A view does not copy. The fixed-field methods assume IPv4MinHeaderLen
// bytes; Options and Payload assume the IHL and Total Length fit, as
// ParseIPv4 checks.
type IPv4 []byte

// IPv4Fields holds the fields IPv4.Encode writes.
type IPv4Fields struct {
	TOS            uint8      // DSCP<<2 | ECN
	TotalLen       uint16     // bytes, header and payload
	ID             uint16     // identification
	Flags          uint8      // IPv4FlagDontFragment, IPv4FlagMoreFragments; low 3 bits used
	FragmentOffset uint16     // bytes, a multiple of 8 (the low 3 bits are dropped)
	TTL            uint8      // time to live, hops
	Protocol       uint8      // such as IPProtoUDP
	Source         netip.Addr // must be an IPv4 (or IPv4-mapped IPv6) address
	Destination    netip.Addr // must be an IPv4 (or IPv4-mapped IPv6) address
	Options        []byte     // raw options, at most 40 bytes; zero-padded to a multiple of 4
}

// HeaderLen returns the header length f describes: 20 bytes plus the
// options rounded up to a multiple of 4.
func (f *IPv4Fields) HeaderLen() int { return IPv4MinHeaderLen + (len(f.Options)+3)&^3 }

// ParseIPv4 checks b the way the kernel's ip_rcv_core does and returns it as
// an IPv4 view trimmed to the Total Length (bytes after it, such as Ethernet
// padding, are dropped). It checks, in order, and returns a *ParseError
// wrapping the sentinel named:
//
//   - at least 20 bytes (ErrTruncated)
//   - version 4 (ErrBadVersion)
//   - IHL at least 5 (ErrBadIHL)
//   - IHL*4 bytes present (ErrTruncated)
//   - Total Length at least IHL*4 (ErrBadLength)
//   - Total Length bytes present (ErrTruncated)
//   - the options well formed: every option but End and NOP has a length of
//     at least 2 that stays inside the header (ErrBadOption), the first of
//     the kernel's ip_options_compile checks; each option's own rules
//     (Record Route's pointer, Timestamp's overflow, Security, Router
//     Alert's length) are not checked
//
// It does not verify the header checksum (see ChecksumValid and
// Frame.VerifyChecksum) and accepts fragments. The returned view aliases b.
// It does not allocate.
func ParseIPv4(b []byte) (IPv4, error) {
	_, tl, err := checkIPv4(b, len(b))
	if err != nil {
		return nil, err
	}
	return IPv4(b[:tl]), nil
}

// checkIPv4 makes ParseIPv4's checks on b, the first bytes of a packet of
// avail bytes in all (len(b) <= avail): the header must lie in b, the Total
// Length in avail. It returns the header and total lengths.
func checkIPv4(b []byte, avail int) (hl, tl int, err error) {
	if len(b) < IPv4MinHeaderLen {
		return 0, 0, short(IPv4MinHeaderLen, avail, errIPv4Short)
	}
	if b[0]>>4 != IPv4Version {
		return 0, 0, errIPv4Version
	}
	hl = int(b[0]&0x0f) * 4
	if hl < IPv4MinHeaderLen {
		return 0, 0, errIPv4IHL
	}
	if len(b) < hl {
		return 0, 0, short(hl, avail, errIPv4HeaderShort)
	}
	tl = int(binary.BigEndian.Uint16(b[2:4]))
	if tl < hl {
		return 0, 0, errIPv4TotalSmall
	}
	if avail < tl {
		return 0, 0, errIPv4TotalShort
	}
	if hl > IPv4MinHeaderLen && !optionsValid(b[IPv4MinHeaderLen:hl]) {
		return 0, 0, errIPv4Option
	}
	return hl, tl, nil
}

// Version returns the 4-bit version field.
func (h IPv4) Version() uint8 { return h[0] >> 4 }

// HeaderLen returns the header length in bytes, IHL*4.
func (h IPv4) HeaderLen() int { return int(h[0]&0x0f) * 4 }

// TOS returns the Type of Service byte (DSCP<<2 | ECN).
func (h IPv4) TOS() uint8 { return h[1] }

// TotalLen returns the Total Length field: header and payload, in bytes.
func (h IPv4) TotalLen() uint16 { return binary.BigEndian.Uint16(h[2:4]) }

// ID returns the Identification field.
func (h IPv4) ID() uint16 { return binary.BigEndian.Uint16(h[4:6]) }

// Flags returns the 3 flag bits: IPv4FlagDontFragment, IPv4FlagMoreFragments.
func (h IPv4) Flags() uint8 { return h[6] >> 5 }

// FragmentOffset returns the fragment offset in bytes (the field times 8).
func (h IPv4) FragmentOffset() uint16 { return binary.BigEndian.Uint16(h[6:8]) << 3 }

// IsFragment reports whether h is a fragment: More Fragments is set or the
// fragment offset is not zero (the kernel's ip_is_fragment).
func (h IPv4) IsFragment() bool { return binary.BigEndian.Uint16(h[6:8])&0x3fff != 0 }

// TTL returns the Time to Live field.
func (h IPv4) TTL() uint8 { return h[8] }

// Protocol returns the protocol of the payload, such as IPProtoUDP.
func (h IPv4) Protocol() uint8 { return h[9] }

// Checksum returns the Header Checksum field.
func (h IPv4) Checksum() uint16 { return binary.BigEndian.Uint16(h[10:12]) }

// Source returns the source address. It does not allocate.
func (h IPv4) Source() netip.Addr { return netip.AddrFrom4([4]byte(h[12:16])) }

// Destination returns the destination address. It does not allocate.
func (h IPv4) Destination() netip.Addr { return netip.AddrFrom4([4]byte(h[16:20])) }

// Options returns the option bytes, between byte 20 and the header length.
// The returned slice aliases h.
func (h IPv4) Options() []byte { return h[IPv4MinHeaderLen:h.HeaderLen()] }

// Payload returns the bytes from the header length to the Total Length. The
// returned slice aliases h.
func (h IPv4) Payload() []byte { return h[h.HeaderLen():h.TotalLen()] }

// SetHeaderLen writes IHL = n/4 and version 4. n must be a multiple of 4
// from 20 to 60; other values are truncated to the 4-bit field.
func (h IPv4) SetHeaderLen(n int) { h[0] = IPv4Version<<4 | uint8(n/4)&0x0f }

// SetTOS writes the Type of Service byte.
func (h IPv4) SetTOS(v uint8) { h[1] = v }

// SetTotalLen writes the Total Length field.
func (h IPv4) SetTotalLen(n uint16) { binary.BigEndian.PutUint16(h[2:4], n) }

// SetID writes the Identification field.
func (h IPv4) SetID(id uint16) { binary.BigEndian.PutUint16(h[4:6], id) }

// SetFlagsFragmentOffset writes the flags (low 3 bits of flags) and the
// fragment offset in bytes (a multiple of 8; the low 3 bits are dropped).
func (h IPv4) SetFlagsFragmentOffset(flags uint8, offset uint16) {
	binary.BigEndian.PutUint16(h[6:8], uint16(flags&7)<<13|offset>>3)
}

// SetTTL writes the Time to Live field.
func (h IPv4) SetTTL(ttl uint8) { h[8] = ttl }

// SetProtocol writes the Protocol field.
func (h IPv4) SetProtocol(p uint8) { h[9] = p }

// SetChecksum writes the Header Checksum field.
func (h IPv4) SetChecksum(c uint16) { binary.BigEndian.PutUint16(h[10:12], c) }

// SetSource writes the source address. a must be an IPv4 or IPv4-mapped
// IPv6 address; SetSource panics otherwise (netip.Addr.As4).
func (h IPv4) SetSource(a netip.Addr) { a4 := a.As4(); copy(h[12:16], a4[:]) }

// SetDestination writes the destination address, as SetSource.
func (h IPv4) SetDestination(a netip.Addr) { a4 := a.As4(); copy(h[16:20], a4[:]) }

// ComputeChecksum returns the value the Header Checksum field must hold: the
// complement of the sum of the header (HeaderLen bytes) with the checksum
// field taken as zero (RFC 791, the kernel's ip_fast_csum). It does not
// write it; see SetChecksum.
func (h IPv4) ComputeChecksum() uint16 {
	hl := h.HeaderLen()
	return ^Checksum(h[12:hl], Checksum(h[0:10], 0))
}

// ChecksumValid reports whether the header sums to 0xffff with its checksum
// field in place (RFC 1071 section 4).
func (h IPv4) ChecksumValid() bool { return Checksum(h[:h.HeaderLen()], 0) == 0xffff }

// PseudoHeaderChecksum returns PseudoHeaderChecksumIPv4 for h's addresses,
// with proto and the transport length in bytes.
func (h IPv4) PseudoHeaderChecksum(proto uint8, length uint16) uint16 {
	return pseudo4(h[12:16], h[16:20], proto, uint32(length))
}

// DecTTL decrements the TTL and updates the header checksum incrementally
// (RFC 1624), as a router does and the kernel's ip_decrease_ttl; it returns
// the new TTL. The caller drops packets whose TTL is 1 or less first
// (RFC 1812 section 5.3.1); DecTTL of 0 wraps to 255.
func (h IPv4) DecTTL() uint8 {
	old := binary.BigEndian.Uint16(h[8:10])
	h[8]--
	h.SetChecksum(ChecksumUpdate16(h.Checksum(), old, binary.BigEndian.Uint16(h[8:10])))
	return h[8]
}

// Encode writes the header f describes, options included, into
// h[:f.HeaderLen()] and fills in its checksum. It panics when f.Options is
// longer than 40 bytes or an address is not IPv4 (or IPv4-mapped IPv6),
// the zero Addr included (programming errors). It does not allocate.
func (h IPv4) Encode(f *IPv4Fields) {
	hl := f.HeaderLen()
	if hl > IPv4MaxHeaderLen {
		panic("header: IPv4.Encode: options longer than 40 bytes")
	}
	if p := addrFault(f.Source, true); p != "" {
		panic("header: IPv4.Encode: Source is " + p)
	}
	if p := addrFault(f.Destination, true); p != "" {
		panic("header: IPv4.Encode: Destination is " + p)
	}
	_ = h[hl-1]
	h[0] = IPv4Version<<4 | uint8(hl/4)
	h[1] = f.TOS
	binary.BigEndian.PutUint16(h[2:4], f.TotalLen)
	binary.BigEndian.PutUint16(h[4:6], f.ID)
	binary.BigEndian.PutUint16(h[6:8], uint16(f.Flags&7)<<13|f.FragmentOffset>>3)
	h[8] = f.TTL
	h[9] = f.Protocol
	h[10], h[11] = 0, 0
	src, dst := f.Source.As4(), f.Destination.As4()
	copy(h[12:16], src[:])
	copy(h[16:20], dst[:])
	n := copy(h[IPv4MinHeaderLen:hl], f.Options)
	clear(h[IPv4MinHeaderLen+n : hl])
	h.SetChecksum(^Checksum(h[:hl], 0))
}

// addrFault returns what is wrong with a as an IPv4 (v4) or IPv6 address
// for an Encode, or "". It keeps its argument off the heap: a message made
// with fmt would make every Encode's Fields escape.
func addrFault(a netip.Addr, v4 bool) string {
	switch {
	case !a.IsValid():
		return "the zero netip.Addr"
	case v4 && !a.Unmap().Is4():
		return "an IPv6 address"
	case !v4 && a.Is4():
		return "an IPv4 address (an IPv6 header takes its mapped form, netip.AddrFrom16(a.As16()))"
	}
	return ""
}

// optionsValid walks IPv4 or TCP options and reports whether they are well
// formed.
func optionsValid(b []byte) bool {
	it := OptionIterator{rest: b}
	for {
		if _, _, ok := it.Next(); !ok {
			return it.err == nil
		}
	}
}

// OptionIterator walks the options of an IPv4 header (RFC 791 section 3.1)
// or a TCP header (RFC 9293 section 3.1), which share one layout: a kind
// byte; kinds 0 (End of Option List) and 1 (No-Operation) stand alone, every
// other kind is followed by a length byte counting kind, length and data.
// The zero value is an empty iterator. It does not allocate.
//
//	for it := header.NewOptionIterator(tcp.Options()); ; {
//		kind, data, ok := it.Next()
//		if !ok {
//			break // it.Err() tells a malformed option from the end
//		}
//		...
//	}
type OptionIterator struct {
	rest []byte
	err  error
}

// NewOptionIterator returns an iterator over the options in b, such as
// IPv4.Options() or TCP.Options().
func NewOptionIterator(b []byte) OptionIterator { return OptionIterator{rest: b} }

// Next returns the next option's kind and data (without the kind and length
// bytes), skipping No-Operation. It returns ok false at an End of Option List,
// at the end of the bytes, or at a malformed option: a length below 2 or
// running past the end, which the kernel's ip_options_compile rejects and
// tcp_parse_options stops at; Err then returns ErrBadOption. The returned
// slice aliases the options.
func (it *OptionIterator) Next() (kind uint8, data []byte, ok bool) {
	for len(it.rest) > 0 {
		kind = it.rest[0]
		switch kind {
		case IPv4OptionEnd:
			it.rest = nil
			return 0, nil, false
		case IPv4OptionNOP:
			it.rest = it.rest[1:]
			continue
		}
		if len(it.rest) < 2 {
			it.rest, it.err = nil, ErrBadOption
			return 0, nil, false
		}
		n := int(it.rest[1])
		if n < 2 || n > len(it.rest) {
			it.rest, it.err = nil, ErrBadOption
			return 0, nil, false
		}
		data, it.rest = it.rest[2:n], it.rest[n:]
		return kind, data, true
	}
	return 0, nil, false
}

// Err returns ErrBadOption when Next stopped at a malformed option, and nil
// otherwise.
func (it *OptionIterator) Err() error { return it.err }
