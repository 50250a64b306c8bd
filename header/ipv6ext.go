package header

import "fmt"

// IPv6 option and Routing header constants, RFC 8200 sections 4.2 to 4.6.
const (
	// Option types (the whole type octet: its top two bits are the action
	// for a node that does not know the option, the third whether its
	// data may change en route).
	IPv6OptionPad1        uint8 = 0x00 // one byte of padding, no length byte
	IPv6OptionPadN        uint8 = 0x01 // N bytes of padding, data zero
	IPv6OptionTunnelLimit uint8 = 0x04 // tunnel encapsulation limit, RFC 2473 section 5.1 (Destination Options)
	IPv6OptionRouterAlert uint8 = 0x05 // router alert, RFC 2711 (Hop-by-Hop)
	IPv6OptionJumbo       uint8 = 0xc2 // jumbo payload, RFC 2675 (Hop-by-Hop; not supported by IPv6.Payload)
	IPv6OptionHomeAddress uint8 = 0xc9 // home address, RFC 6275 section 6.3 (Destination Options)

	// Routing types.
	IPv6RoutingType0    uint8 = 0 // deprecated source route, RFC 5095: a node must not process it
	IPv6RoutingType2    uint8 = 2 // Mobile IPv6, RFC 6275 section 6.4
	IPv6RoutingRPL      uint8 = 3 // RPL source route, RFC 6554
	IPv6RoutingSegments uint8 = 4 // segment routing header (SRH), RFC 8754

	// IPv6ExtMaxLen is the longest Hop-by-Hop, Routing or Destination
	// Options header: a Hdr Ext Len of 255, (255+1)*8 bytes.
	IPv6ExtMaxLen = 2048
)

// Actions the top two bits of an option type ask of a node that does not
// know the option, RFC 8200 section 4.2, as IPv6OptionUnknownAction returns
// them (the kernel's ip6_tlvopt_unknown).
const (
	IPv6OptionSkip           uint8 = 0 // skip the option, go on with the header
	IPv6OptionDiscard        uint8 = 1 // discard the packet
	IPv6OptionDiscardICMP    uint8 = 2 // discard and send ICMPv6 Parameter Problem, code 2
	IPv6OptionDiscardUnicast uint8 = 3 // discard, and send the ICMPv6 only if the destination is not multicast
)

// IPv6OptionUnknownAction returns what the option type asks of a node that
// does not know it: IPv6OptionSkip, IPv6OptionDiscard,
// IPv6OptionDiscardICMP or IPv6OptionDiscardUnicast.
func IPv6OptionUnknownAction(typ uint8) uint8 { return typ >> 6 }

// IPv6OptionMayChange reports whether the option's data may change en route
// (the type's third bit), in which case an AH integrity check treats it as
// zeros.
func IPv6OptionMayChange(typ uint8) bool { return typ&0x20 != 0 }

// IPv6Options is a view of an IPv6 Hop-by-Hop Options header (RFC 8200
// section 4.3, protocol IPProtoHopByHop) or Destination Options header
// (section 4.6, IPProtoDstOpts), the kernel's struct ipv6_opt_hdr:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Next Header  |  Hdr Ext Len  |                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//	|                            Options                            |
//	.                                                               .
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The header is (Hdr Ext Len + 1) * 8 bytes. The options are TLVs: a type
// byte, a length byte counting the data only, and the data; the type
// IPv6OptionPad1 stands alone. Walk them with NewIPv6OptionIterator. The
// methods assume the header's length, as ParseIPv6Options checks; a view
// does not copy.
type IPv6Options []byte

// IPv6OptionsFields holds what IPv6Options.Encode writes.
type IPv6OptionsFields struct {
	NextHeader uint8 // protocol after this header, such as IPProtoUDP

	// Options holds the options, each a type, a length and data (as
	// AppendIPv6Option writes them), without the padding to a multiple of
	// 8 bytes, which Encode adds. They must not end in padding of their
	// own (alignment padding goes before an option): Encode's would follow
	// it, and more than 7 bytes of padding in a row make the header
	// malformed (RFC 8200 section 4.2; the kernel drops it). At most
	// IPv6ExtMaxLen-2 bytes.
	Options []byte
}

// HeaderLen returns the bytes Encode writes: 2 plus the options, rounded up
// to a multiple of 8.
func (f *IPv6OptionsFields) HeaderLen() int { return (2 + len(f.Options) + 7) &^ 7 }

// ParseIPv6Options checks that b starts with a Hop-by-Hop or Destination
// Options header whose length b holds, and returns a view of that header
// (its Hdr Ext Len's bytes, not the rest of b). It returns a *ParseError
// wrapping ErrTruncated when b is shorter than 2 bytes or than the length;
// it does not check the options (see NewIPv6OptionIterator). It does not
// allocate.
func ParseIPv6Options(b []byte) (IPv6Options, error) {
	if len(b) < 2 || len(b) < (int(b[1])+1)*8 {
		return nil, errIPv6OptsShort
	}
	return IPv6Options(b[:(int(b[1])+1)*8]), nil
}

// NextHeader returns the protocol of the header after this one.
func (h IPv6Options) NextHeader() uint8 { return h[0] }

// HeaderLen returns the header's length in bytes, (Hdr Ext Len + 1) * 8.
func (h IPv6Options) HeaderLen() int { return (int(h[1]) + 1) * 8 }

// Options returns the options area, padding included: the bytes from 2 to
// HeaderLen. It aliases h.
func (h IPv6Options) Options() []byte { return h[2:h.HeaderLen()] }

// SetNextHeader writes the Next Header field.
func (h IPv6Options) SetNextHeader(p uint8) { h[0] = p }

// Encode writes the header f describes into h[:f.HeaderLen()]: the options,
// then one Pad1 or a PadN option to a multiple of 8 bytes (RFC 8200 section
// 4.2). It panics, with the lengths, when f.Options is longer than
// IPv6ExtMaxLen-2 bytes or h is shorter than the header. It does not check
// the options and does not allocate.
func (h IPv6Options) Encode(f *IPv6OptionsFields) {
	n := f.HeaderLen()
	if n > IPv6ExtMaxLen || len(h) < n {
		panic(fmt.Sprintf("header: IPv6Options.Encode of %d bytes of options (a %d-byte header, at most %d) into %d bytes", len(f.Options), n, IPv6ExtMaxLen, len(h)))
	}
	h[0], h[1] = f.NextHeader, uint8(n/8-1)
	pad := h[2+copy(h[2:n], f.Options) : n]
	switch len(pad) {
	case 0:
	case 1:
		pad[0] = IPv6OptionPad1
	default:
		pad[0], pad[1] = IPv6OptionPadN, uint8(len(pad)-2)
		clear(pad[2:])
	}
}

// AppendIPv6Option appends an option of type typ holding data, as a type
// byte, a length byte and the data (RFC 8200 section 4.2), to b and returns
// the extended slice; for IPv6OptionPad1 it appends the type byte only. It
// adds no alignment padding: an option that asks for alignment (such as
// the Jumbo Payload's 4n+2) must be placed by the caller, with Pad1 and
// PadN options. It panics when data is longer than 255 bytes. It allocates
// only when b must grow.
func AppendIPv6Option(b []byte, typ uint8, data []byte) []byte {
	if typ == IPv6OptionPad1 {
		return append(b, typ)
	}
	if len(data) > 255 {
		panic(fmt.Sprintf("header: AppendIPv6Option of %d bytes of data (at most 255)", len(data)))
	}
	b = append(b, typ, uint8(len(data)))
	return append(b, data...)
}

// IPv6OptionIterator walks the options of a Hop-by-Hop or Destination
// Options header (IPv6Options.Options), as the kernel's ip6_parse_tlv does.
// Padding (Pad1 and PadN) is checked and skipped. The zero value is an empty
// iterator. It does not allocate.
//
//	for it := header.NewIPv6OptionIterator(opts.Options()); ; {
//		typ, data, ok := it.Next()
//		if !ok {
//			break // it.Err() tells a malformed option from the end
//		}
//		...
//	}
type IPv6OptionIterator struct {
	rest []byte
	pad  int // bytes of padding in a row
	err  error
}

// NewIPv6OptionIterator returns an iterator over the options in b.
func NewIPv6OptionIterator(b []byte) IPv6OptionIterator { return IPv6OptionIterator{rest: b} }

// Next returns the next option that is not padding: its type and its data
// (without the type and length bytes, aliasing the options). It returns ok
// false at the end of the bytes or at a malformed option, after which Err
// returns ErrBadOption. Malformed, as the kernel drops the packet for it
// (ip6_parse_tlv): an option running past the end, more than 7 bytes of
// padding in a row (RFC 8200 section 4.2 needs at most 7), or a PadN whose
// data is not zero. The kernel's limit on the count of options
// (net.ipv6.conf.max_hbh_opts_cnt and max_dst_opts_cnt, 8 by default) is
// not checked.
func (it *IPv6OptionIterator) Next() (typ uint8, data []byte, ok bool) {
	for len(it.rest) > 0 {
		typ = it.rest[0]
		if typ == IPv6OptionPad1 {
			it.rest = it.rest[1:]
			if it.pad++; it.pad > 7 {
				return it.fail()
			}
			continue
		}
		if len(it.rest) < 2 || int(it.rest[1])+2 > len(it.rest) {
			return it.fail()
		}
		n := int(it.rest[1]) + 2
		data, it.rest = it.rest[2:n], it.rest[n:]
		if typ != IPv6OptionPadN {
			it.pad = 0
			return typ, data, true
		}
		if it.pad += n; it.pad > 7 {
			return it.fail()
		}
		for _, c := range data {
			if c != 0 {
				return it.fail()
			}
		}
	}
	return 0, nil, false
}

func (it *IPv6OptionIterator) fail() (uint8, []byte, bool) {
	it.rest, it.err = nil, ErrBadOption
	return 0, nil, false
}

// Err returns ErrBadOption when Next stopped at a malformed option, and nil
// otherwise.
func (it *IPv6OptionIterator) Err() error { return it.err }

// IPv6Routing is a view of an IPv6 Routing header (RFC 8200 section 4.4,
// protocol IPProtoRouting), the kernel's struct ipv6_rt_hdr:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Next Header  |  Hdr Ext Len  |  Routing Type | Segments Left |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	.                       type-specific data                      .
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The header is (Hdr Ext Len + 1) * 8 bytes; Segments Left counts the
// route's nodes still to visit. For type 2 (and the deprecated type 0) the
// data is 4 reserved bytes and then 16-byte addresses; for segment routing
// (type 4, RFC 8754) it starts with Last Entry, Flags and Tag. The methods
// assume the header's length, as ParseIPv6Routing checks; a view does not
// copy.
type IPv6Routing []byte

// IPv6RoutingFields holds what IPv6Routing.Encode writes.
type IPv6RoutingFields struct {
	NextHeader   uint8 // protocol after this header, such as IPProtoUDP
	RoutingType  uint8 // such as IPv6RoutingType2
	SegmentsLeft uint8 // nodes still to visit

	// Data is the type-specific data from byte 4, which Encode pads with
	// zeros to a multiple of 8 bytes. At most IPv6ExtMaxLen-4 bytes.
	Data []byte
}

// HeaderLen returns the bytes Encode writes: 4 plus the data, rounded up to
// a multiple of 8.
func (f *IPv6RoutingFields) HeaderLen() int { return (4 + len(f.Data) + 7) &^ 7 }

// ParseIPv6Routing checks that b starts with a Routing header whose length
// b holds, and returns a view of that header (its Hdr Ext Len's bytes). It
// returns a *ParseError wrapping ErrTruncated when b is shorter than 2
// bytes or than the length; it does not check the type-specific data. It
// does not allocate.
func ParseIPv6Routing(b []byte) (IPv6Routing, error) {
	if len(b) < 2 || len(b) < (int(b[1])+1)*8 {
		return nil, errIPv6RoutingShort
	}
	return IPv6Routing(b[:(int(b[1])+1)*8]), nil
}

// NextHeader returns the protocol of the header after this one.
func (h IPv6Routing) NextHeader() uint8 { return h[0] }

// HeaderLen returns the header's length in bytes, (Hdr Ext Len + 1) * 8.
func (h IPv6Routing) HeaderLen() int { return (int(h[1]) + 1) * 8 }

// RoutingType returns the Routing Type.
func (h IPv6Routing) RoutingType() uint8 { return h[2] }

// SegmentsLeft returns the count of route nodes still to visit.
func (h IPv6Routing) SegmentsLeft() uint8 { return h[3] }

// Data returns the type-specific data: the bytes from 4 to HeaderLen. It
// aliases h.
func (h IPv6Routing) Data() []byte { return h[4:h.HeaderLen()] }

// Addresses returns how many 16-byte addresses the data of a type 0 or type
// 2 header holds after its 4 reserved bytes (RFC 2460 section 4.4, RFC
// 6275 section 6.4), and 0 for other types. Address i is at
// Data()[4+16*i:].
func (h IPv6Routing) Addresses() int {
	if t := h.RoutingType(); t != IPv6RoutingType0 && t != IPv6RoutingType2 {
		return 0
	}
	return (h.HeaderLen() - 8) / 16
}

// SetNextHeader writes the Next Header field.
func (h IPv6Routing) SetNextHeader(p uint8) { h[0] = p }

// SetSegmentsLeft writes the Segments Left field, as a router that visits
// the next node decrements it.
func (h IPv6Routing) SetSegmentsLeft(n uint8) { h[3] = n }

// Encode writes the header f describes into h[:f.HeaderLen()], the data
// padded with zeros. It panics, with the lengths, when f.Data is longer
// than IPv6ExtMaxLen-4 bytes or h is shorter than the header. It does not
// allocate.
func (h IPv6Routing) Encode(f *IPv6RoutingFields) {
	n := f.HeaderLen()
	if n > IPv6ExtMaxLen || len(h) < n {
		panic(fmt.Sprintf("header: IPv6Routing.Encode of %d bytes of data (a %d-byte header, at most %d) into %d bytes", len(f.Data), n, IPv6ExtMaxLen, len(h)))
	}
	h[0], h[1], h[2], h[3] = f.NextHeader, uint8(n/8-1), f.RoutingType, f.SegmentsLeft
	clear(h[4+copy(h[4:n], f.Data) : n])
}
