package header

import "errors"

// Sentinel errors. Every error a parser returns matches exactly one of them
// with errors.Is. Parsers return a preallocated *ParseError wrapping the
// sentinel, and the other functions the sentinel itself, so a failure on the
// hot path allocates nothing; drivers count the drop by sentinel.
var (
	// ErrTruncated is returned when fewer bytes are present than a header's
	// fixed part or one of its length fields needs (IPv4 IHL and total
	// length, IPv6 payload length, UDP length, TCP data offset, ARP address
	// lengths, an extension header running past the payload), by
	// ParseFrameBuff and ParsePacketBuff when a header lies beyond the
	// linear data (layer "frame"), and by BuildUDP for a frame shorter
	// than its headers.
	ErrTruncated = errors.New("header: truncated")

	// ErrBadVersion is returned when the IP version field is not 4 for
	// IPv4 or not 6 for IPv6, or ParsePacket finds neither.
	ErrBadVersion = errors.New("header: bad IP version")

	// ErrBadIHL is returned when an IPv4 Internet Header Length is below 5
	// (20 bytes), the minimum of RFC 791.
	ErrBadIHL = errors.New("header: bad IPv4 header length")

	// ErrBadLength is returned when a length field is smaller than the
	// header it must cover (IPv4 total length below IHL*4, UDP length
	// below 8), and by BuildUDP when the frame does not fit the length
	// fields.
	ErrBadLength = errors.New("header: bad length field")

	// ErrBadDataOffset is returned when a TCP data offset is below 5
	// (20 bytes), the minimum of RFC 9293.
	ErrBadDataOffset = errors.New("header: bad TCP data offset")

	// ErrBadOption is returned for a malformed IPv4 or TCP option (an
	// option length below 2 or running past the options area), and by
	// IPv6OptionIterator.Err and NDPOptionIterator.Err for a malformed
	// IPv6 or Neighbor Discovery option.
	ErrBadOption = errors.New("header: bad option")

	// ErrBadExtensionHeader is returned for an IPv6 extension header chain
	// that breaks RFC 8200 section 4.1, such as a Hop-by-Hop Options header
	// that does not directly follow the fixed header.
	ErrBadExtensionHeader = errors.New("header: bad IPv6 extension header")

	// ErrBadType is returned by ParseNDP for an ICMPv6 type that is not a
	// Neighbor Discovery message.
	ErrBadType = errors.New("header: unexpected message type")

	// ErrBadChecksum is returned by Frame.VerifyChecksum and
	// Frame.VerifyChecksumBuff when an IPv4 header, UDP, TCP or ICMP
	// checksum does not verify.
	ErrBadChecksum = errors.New("header: bad checksum")

	// ErrBadChecksumOffset is returned by FinishChecksum when csum_start
	// or csum_start+csum_offset+2 lies outside the packet, and by
	// FinishChecksumBuff when either lies outside the linear data.
	ErrBadChecksumOffset = errors.New("header: checksum start or offset out of range")

	// ErrGSO is returned by FinishChecksumBuff for a GSO buffer: its
	// checksums are per segment, so it must be segmented first (the
	// kernel's skb_checksum_help returns -EINVAL).
	ErrGSO = errors.New("header: checksum of a GSO buffer: segment it first")

	// ErrCloned is returned by FinishChecksumBuff when the buffer's data
	// is shared and no allocator was given to make its head private.
	ErrCloned = errors.New("header: buffer data is shared and no allocator was given")

	// ErrBadAddress is returned by BuildUDP when the source and destination
	// addresses are invalid or of different families.
	ErrBadAddress = errors.New("header: bad address")

	// ErrBadVLAN is returned by BuildUDP for a VLAN tag protocol other
	// than EtherTypeVLAN (802.1Q) or EtherTypeQinQ (802.1ad), or 0 for
	// none.
	ErrBadVLAN = errors.New("header: bad VLAN tag protocol")
)

// ParseError is the error a parser returns: the layer and the reason, wrapping
// one of the sentinel errors above. Parsers return preallocated values, so
// the same pointer comes back for the same failure; callers must not modify
// it. Match it with errors.Is against a sentinel, or errors.As to read the
// layer.
type ParseError struct {
	Layer  string // the header that failed: "ethernet", "vlan", "arp", "ip", "ipv4", "ipv6", "ipv6 fragment", "ipv6 options", "ipv6 routing", "udp", "tcp", "icmpv4", "icmpv6", "ndp", or "frame" for a header beyond the linear data
	Reason string // what was wrong, in words
	Err    error  // the sentinel, one of the Err values of this package
}

// Error returns "header: parse LAYER: REASON".
func (e *ParseError) Error() string { return "header: parse " + e.Layer + ": " + e.Reason }

// Unwrap returns the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }

func perr(layer, reason string, err error) *ParseError {
	return &ParseError{Layer: layer, Reason: reason, Err: err}
}

// The preallocated errors returned on the hot path.
var (
	// errLinear: the packet is long enough but the header is not in the
	// linear data that ParseFrameBuff reads.
	errLinear   = perr("frame", "a header lies past the linear data (pull it in first)", ErrTruncated)
	errFrameFit = perr("frame", "headers do not fit the bytes given (verify a frame parsed without error from them)", ErrTruncated)

	errEthernetShort = perr("ethernet", "frame shorter than 14 bytes", ErrTruncated)
	err8023Length    = perr("ethernet", "802.3 length beyond the bytes present", ErrTruncated)
	errVLANShort     = perr("vlan", "tag shorter than 4 bytes", ErrTruncated)

	errARPShort     = perr("arp", "packet shorter than 8 bytes", ErrTruncated)
	errARPAddresses = perr("arp", "addresses run past the bytes present", ErrTruncated)

	errIPv4Short       = perr("ipv4", "packet shorter than 20 bytes", ErrTruncated)
	errIPv4Version     = perr("ipv4", "version is not 4", ErrBadVersion)
	errIPv4IHL         = perr("ipv4", "header length below 20 bytes", ErrBadIHL)
	errIPv4HeaderShort = perr("ipv4", "header length beyond the bytes present", ErrTruncated)
	errIPv4TotalSmall  = perr("ipv4", "total length below the header length", ErrBadLength)
	errIPv4TotalShort  = perr("ipv4", "total length beyond the bytes present", ErrTruncated)
	errIPv4Option      = perr("ipv4", "malformed option", ErrBadOption)
	errIPv4Checksum    = perr("ipv4", "header checksum", ErrBadChecksum)

	errIPv6Short        = perr("ipv6", "packet shorter than 40 bytes", ErrTruncated)
	errIPv6Version      = perr("ipv6", "version is not 6", ErrBadVersion)
	errIPv6Payload      = perr("ipv6", "payload length beyond the bytes present", ErrTruncated)
	errIPv6ExtShort     = perr("ipv6", "extension header beyond the payload", ErrTruncated)
	errIPv6HopByHop     = perr("ipv6", "hop-by-hop options header not first", ErrBadExtensionHeader)
	errIPv6FragShort    = perr("ipv6 fragment", "header shorter than 8 bytes", ErrTruncated)
	errIPv6OptsShort    = perr("ipv6 options", "header shorter than 2 bytes or than its length field", ErrTruncated)
	errNDPShort         = perr("ndp", "message shorter than its type's fixed part", ErrTruncated)
	errNDPType          = perr("ndp", "not a neighbor discovery message type (133 to 137)", ErrBadType)
	errIPv6RoutingShort = perr("ipv6 routing", "header shorter than 2 bytes or than its length field", ErrTruncated)
	errPacketVersion    = perr("ip", "version is neither 4 nor 6", ErrBadVersion)
	errPacketEmpty      = perr("ip", "empty packet", ErrTruncated)

	errUDPShort    = perr("udp", "datagram shorter than 8 bytes", ErrTruncated)
	errUDPLenSmall = perr("udp", "length below 8", ErrBadLength)
	errUDPLenShort = perr("udp", "length beyond the bytes present", ErrTruncated)
	errUDPChecksum = perr("udp", "checksum", ErrBadChecksum)

	errTCPShort      = perr("tcp", "segment shorter than 20 bytes", ErrTruncated)
	errTCPDataOffset = perr("tcp", "data offset below 20 bytes", ErrBadDataOffset)
	errTCPHeader     = perr("tcp", "data offset beyond the bytes present", ErrTruncated)
	errTCPOption     = perr("tcp", "malformed option", ErrBadOption)
	errTCPChecksum   = perr("tcp", "checksum", ErrBadChecksum)

	errICMPv4Short    = perr("icmpv4", "message shorter than 8 bytes", ErrTruncated)
	errICMPv4Checksum = perr("icmpv4", "checksum", ErrBadChecksum)
	errICMPv6Short    = perr("icmpv6", "message shorter than 8 bytes", ErrTruncated)
	errICMPv6Checksum = perr("icmpv6", "checksum", ErrBadChecksum)
)

// short returns the error for a header of need bytes that the bytes at hand
// lack: errLinear when the packet, avail bytes in all, has them in its paged
// part; err otherwise.
func short(need, avail int, err *ParseError) error {
	if avail >= need {
		return errLinear
	}
	return err
}
