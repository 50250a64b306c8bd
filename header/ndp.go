package header

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Neighbor Discovery constants, RFC 4861.
const (
	// NDPHopLimit is the Hop Limit every Neighbor Discovery message is
	// sent with and must arrive with (RFC 4861 sections 6.1, 7.1 and 8.1),
	// which proves that no router forwarded it.
	NDPHopLimit = 255

	// Option types, RFC 4861 section 4.6 (and RFC 8106 for RDNSS).
	NDPOptionSourceLinkAddr uint8 = 1  // source link-layer address
	NDPOptionTargetLinkAddr uint8 = 2  // target link-layer address
	NDPOptionPrefixInfo     uint8 = 3  // prefix information (router advertisements)
	NDPOptionRedirected     uint8 = 4  // redirected header (redirects)
	NDPOptionMTU            uint8 = 5  // MTU (router advertisements)
	NDPOptionRDNSS          uint8 = 25 // recursive DNS servers, RFC 8106

	// Flags of a Neighbor Advertisement (byte 4), section 4.4.
	NDPFlagRouter    uint8 = 0x80 // R: the sender is a router
	NDPFlagSolicited uint8 = 0x40 // S: an answer to a Neighbor Solicitation
	NDPFlagOverride  uint8 = 0x20 // O: replace a cached link-layer address

	// Flags of a Router Advertisement (byte 5), section 4.2 and later
	// RFCs.
	NDPFlagManaged     uint8 = 0x80 // M: addresses from DHCPv6
	NDPFlagOtherConfig uint8 = 0x40 // O: other configuration from DHCPv6
	NDPFlagHomeAgent   uint8 = 0x20 // H: the router is a Mobile IPv6 home agent, RFC 6275 section 7.1
	NDPRouterPrefMask  uint8 = 0x18 // Prf: default router preference (01 high, 00 medium, 11 low), RFC 4191 section 2.2
	NDPFlagProxy       uint8 = 0x04 // P: proxied, RFC 4389 section 4.1.3.3
)

// NDP is a view of an ICMPv6 Neighbor Discovery message (RFC 4861 section
// 4), from its ICMPv6 header to the end of its options. The fixed part
// depends on the type; the options follow it:
//
//	Router Solicitation (133), 8 bytes:
//	|  Type = 133   |   Code = 0    |          Checksum             |
//	|                           Reserved                            |
//
//	Router Advertisement (134), 16 bytes:
//	|  Type = 134   |   Code = 0    |          Checksum             |
//	| Cur Hop Limit |M|O| Reserved  |       Router Lifetime         |
//	|                         Reachable Time                        |
//	|                          Retrans Timer                        |
//
//	Neighbor Solicitation (135) and Advertisement (136), 24 bytes:
//	|  Type         |   Code = 0    |          Checksum             |
//	|R|S|O|                     Reserved                            |
//	|                   Target Address (16 bytes)                   |
//
//	Redirect (137), 40 bytes:
//	|  Type = 137   |   Code = 0    |          Checksum             |
//	|                           Reserved                            |
//	|                   Target Address (16 bytes)                   |
//	|                 Destination Address (16 bytes)                |
//
// The R, S and O flags are a Neighbor Advertisement's (a solicitation's
// byte 4 is reserved). Router Lifetime counts seconds, Reachable Time and
// Retrans Timer milliseconds (0: unspecified). The checksum is ICMPv6's
// (ICMPv6(h).ComputeChecksum). A view does not copy. Each field's method
// reads the bytes at the field's offset, whatever the type (switch on Type
// first), and returns the zero value when the message is too short for the
// field (Target on a Router Solicitation): a parsed view never panics.
type NDP []byte

// NDPFixedLen returns the length of the fixed part of a Neighbor
// Discovery message of type typ, before its options, and 0 for a type that
// is not one (RFC 4861 section 4).
func NDPFixedLen(typ uint8) int {
	switch typ {
	case ICMPv6RouterSolicit:
		return 8
	case ICMPv6RouterAdvert:
		return 16
	case ICMPv6NeighborSolicit, ICMPv6NeighborAdvert:
		return 24
	case ICMPv6Redirect:
		return 40
	}
	return 0
}

// ParseNDP checks that b holds a Neighbor Discovery message (ICMPv6 types
// 133 to 137) with its type's fixed part, and returns b as an NDP view. It
// returns a *ParseError wrapping ErrBadType for another type and
// ErrTruncated for a message shorter than its fixed part. It does not check
// the checksum, the options (see NewNDPOptionIterator) or the rest of what
// RFC 4861 sections 6.1, 7.1 and 8.1 ask a receiver to check, such as Hop
// Limit NDPHopLimit, Code 0, a target that is not multicast, and a
// link-local source for router messages. It does not allocate.
func ParseNDP(b []byte) (NDP, error) {
	if len(b) < 1 {
		return nil, errNDPShort
	}
	n := NDPFixedLen(b[0])
	switch {
	case n == 0:
		return nil, errNDPType
	case len(b) < n:
		return nil, errNDPShort
	}
	return NDP(b), nil
}

// Type returns the ICMPv6 type.
func (h NDP) Type() uint8 { return h[0] }

// Code returns the ICMPv6 code, 0 in every valid message.
func (h NDP) Code() uint8 { return h[1] }

// Flags returns a Neighbor Advertisement's R, S and O flags (NDPFlagRouter,
// NDPFlagSolicited, NDPFlagOverride) as byte 4 holds them.
func (h NDP) Flags() uint8 { return h[4] & 0xe0 }

// Target returns the Target Address of a Neighbor Solicitation,
// Advertisement or Redirect (bytes 8 to 24; the zero Addr when shorter).
func (h NDP) Target() netip.Addr {
	if len(h) < 24 {
		return netip.Addr{}
	}
	return netip.AddrFrom16([16]byte(h[8:24]))
}

// Destination returns the Destination Address of a Redirect (bytes 24 to
// 40; the zero Addr when shorter).
func (h NDP) Destination() netip.Addr {
	if len(h) < 40 {
		return netip.Addr{}
	}
	return netip.AddrFrom16([16]byte(h[24:40]))
}

// CurHopLimit returns a Router Advertisement's hop limit for outgoing
// packets (0: unspecified).
func (h NDP) CurHopLimit() uint8 { return h[4] }

// RouterFlags returns a Router Advertisement's byte 5: the M, O, H and P
// flags and the Prf preference (NDPFlagManaged, NDPFlagOtherConfig,
// NDPFlagHomeAgent, NDPFlagProxy, NDPRouterPrefMask).
func (h NDP) RouterFlags() uint8 { return h[5] }

// RouterLifetime returns a Router Advertisement's Router Lifetime, in
// seconds (0: not a default router).
func (h NDP) RouterLifetime() uint16 { return binary.BigEndian.Uint16(h[6:8]) }

// ReachableTime returns a Router Advertisement's Reachable Time, in
// milliseconds (0 when the message is shorter than 12 bytes).
func (h NDP) ReachableTime() uint32 {
	if len(h) < 12 {
		return 0
	}
	return binary.BigEndian.Uint32(h[8:12])
}

// RetransTimer returns a Router Advertisement's Retrans Timer, in
// milliseconds (0 when the message is shorter than 16 bytes).
func (h NDP) RetransTimer() uint32 {
	if len(h) < 16 {
		return 0
	}
	return binary.BigEndian.Uint32(h[12:16])
}

// Options returns the options: the bytes after the type's fixed part. It
// aliases h.
func (h NDP) Options() []byte { return h[NDPFixedLen(h[0]):] }

// SetFlags writes a Neighbor Advertisement's R, S and O flags, keeping the
// reserved bits.
func (h NDP) SetFlags(f uint8) { h[4] = h[4]&^0xe0 | f&0xe0 }

// SetTarget writes the Target Address. It panics, naming the field, for an
// address that is not IPv6, or a message shorter than 24 bytes.
func (h NDP) SetTarget(a netip.Addr) {
	if p := addrFault(a, false); p != "" {
		panic("header: NDP.SetTarget: the target is " + p)
	}
	if len(h) < 24 {
		panic(fmt.Sprintf("header: NDP.SetTarget on a message of %d bytes: the target is bytes 8 to 24", len(h)))
	}
	a16 := a.As16()
	copy(h[8:24], a16[:])
}

// NDPFields holds what NDP.Encode writes.
type NDPFields struct {
	Type uint8 // ICMPv6RouterSolicit to ICMPv6Redirect

	Flags uint8 // a Neighbor Advertisement's R, S, O (NDPFlagRouter...)

	Target      netip.Addr // Neighbor Solicitation, Advertisement, Redirect: IPv6
	Destination netip.Addr // Redirect: IPv6

	// Router Advertisement fields.
	CurHopLimit    uint8
	RouterFlags    uint8  // byte 5: M, O, H, Prf, P (NDPFlagManaged...)
	RouterLifetime uint16 // seconds
	ReachableTime  uint32 // milliseconds
	RetransTimer   uint32 // milliseconds

	// Options holds the options, each as AppendNDPOption writes it.
	Options []byte
}

// Len returns the bytes Encode writes: the type's fixed part and the
// options.
func (f *NDPFields) Len() int { return NDPFixedLen(f.Type) + len(f.Options) }

// Encode writes the message f describes into h[:f.Len()], with Code 0,
// the reserved bytes zero and the checksum zero: compute it once the
// message is in place, with ICMPv6(h[:f.Len()]).ComputeChecksum and the
// pseudo-header sum. It panics, with the lengths or the field, for a type
// that is not Neighbor Discovery, an h shorter than f.Len(), or a Target
// or Destination the type needs that is not an IPv6 address. It does not
// allocate.
func (h NDP) Encode(f *NDPFields) {
	n := NDPFixedLen(f.Type)
	if n == 0 || len(h) < n+len(f.Options) {
		panic(fmt.Sprintf("header: NDP.Encode of type %d (a %d-byte fixed part) with %d bytes of options into %d bytes", f.Type, n, len(f.Options), len(h)))
	}
	clear(h[:n])
	h[0] = f.Type
	switch f.Type {
	case ICMPv6RouterAdvert:
		h[4], h[5] = f.CurHopLimit, f.RouterFlags
		binary.BigEndian.PutUint16(h[6:8], f.RouterLifetime)
		binary.BigEndian.PutUint32(h[8:12], f.ReachableTime)
		binary.BigEndian.PutUint32(h[12:16], f.RetransTimer)
	case ICMPv6NeighborAdvert:
		h[4] = f.Flags & 0xe0
		fallthrough
	case ICMPv6NeighborSolicit:
		h.encodeAddr(8, "Target", f.Target)
	case ICMPv6Redirect:
		h.encodeAddr(8, "Target", f.Target)
		h.encodeAddr(24, "Destination", f.Destination)
	}
	copy(h[n:], f.Options)
}

// encodeAddr writes a at h[off:off+16] for Encode, or panics naming field.
func (h NDP) encodeAddr(off int, field string, a netip.Addr) {
	if p := addrFault(a, false); p != "" {
		panic("header: NDP.Encode: " + field + " is " + p)
	}
	a16 := a.As16()
	copy(h[off:off+16], a16[:])
}

// AppendNDPOption appends an option of type typ holding data to b and
// returns the extended slice: a type byte, a length byte counting 8-byte
// units, the data, and zeros to the next multiple of 8 (RFC 4861 section
// 4.6). For a link-layer address option, data is the 6-byte MAC (the
// option is then 8 bytes, RFC 2464 section 8). It panics when the option
// would be longer than 255 units (2038 bytes of data). It allocates only
// when b must grow.
func AppendNDPOption(b []byte, typ uint8, data []byte) []byte {
	units := (2 + len(data) + 7) / 8
	if units > 255 {
		panic(fmt.Sprintf("header: AppendNDPOption of %d bytes of data (at most 2038)", len(data)))
	}
	b = append(b, typ, uint8(units))
	b = append(b, data...)
	for range units*8 - 2 - len(data) {
		b = append(b, 0)
	}
	return b
}

// NDPLinkAddr returns the Ethernet address of a source or target
// link-layer address option's data, as NDPOptionIterator.Next returns it:
// over Ethernet the option is 8 bytes (Length 1) and its data the 6 bytes
// of the MAC (RFC 2464 section 8). It returns false for data of another
// length, an option the kernel drops the message for (ndisc_opt_addr_data).
func NDPLinkAddr(data []byte) (MAC, bool) {
	if len(data) != 6 {
		return MAC{}, false
	}
	return MAC(data), true
}

// NDPOptionIterator walks the options of a Neighbor Discovery message
// (NDP.Options), RFC 4861 section 4.6: a type byte, a length byte counting
// 8-byte units including both, and data. The zero value is an empty
// iterator. It does not allocate.
//
//	for it := header.NewNDPOptionIterator(msg.Options()); ; {
//		typ, data, ok := it.Next()
//		if !ok {
//			break // it.Err() tells a malformed option from the end
//		}
//		...
//	}
type NDPOptionIterator struct {
	rest []byte
	err  error
}

// NewNDPOptionIterator returns an iterator over the options in b.
func NewNDPOptionIterator(b []byte) NDPOptionIterator { return NDPOptionIterator{rest: b} }

// Next returns the next option's type and data (the option without its
// type and length bytes, padding included, aliasing the message). It
// returns ok false at the end of the bytes or at a malformed option, after
// which Err returns ErrBadOption: a length of zero, which RFC 4861 section
// 4.6 has a receiver discard the message for, or an option running past
// the end.
func (it *NDPOptionIterator) Next() (typ uint8, data []byte, ok bool) {
	if len(it.rest) == 0 {
		return 0, nil, false
	}
	if len(it.rest) < 2 || it.rest[1] == 0 || int(it.rest[1])*8 > len(it.rest) {
		it.rest, it.err = nil, ErrBadOption
		return 0, nil, false
	}
	n := int(it.rest[1]) * 8
	typ, data, it.rest = it.rest[0], it.rest[2:n], it.rest[n:]
	return typ, data, true
}

// Err returns ErrBadOption when Next stopped at a malformed option, and nil
// otherwise.
func (it *NDPOptionIterator) Err() error { return it.err }
