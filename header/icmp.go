package header

import "encoding/binary"

// ICMP constants.
const (
	// ICMPv4HeaderLen is the length of an ICMP header with its 4-byte
	// rest-of-header word, which every message of RFC 792 has.
	ICMPv4HeaderLen = 8

	// ICMPv6HeaderLen is the length of an ICMPv6 header with the first 4
	// bytes of the message body, which every error and echo message of
	// RFC 4443 has; the kernel's icmpv6_rcv requires as much
	// (struct icmp6hdr).
	ICMPv6HeaderLen = 8

	// ICMPv4 types, RFC 792 (and RFC 1191 for fragmentation needed).
	ICMPv4EchoReply      uint8 = 0
	ICMPv4DestUnreach    uint8 = 3
	ICMPv4Redirect       uint8 = 5
	ICMPv4Echo           uint8 = 8
	ICMPv4TimeExceeded   uint8 = 11
	ICMPv4ParamProblem   uint8 = 12
	ICMPv4CodeFragNeeded uint8 = 4 // code of ICMPv4DestUnreach, RFC 1191

	// ICMPv6 types, RFC 4443 and RFC 4861.
	ICMPv6DestUnreach     uint8 = 1
	ICMPv6PacketTooBig    uint8 = 2
	ICMPv6TimeExceeded    uint8 = 3
	ICMPv6ParamProblem    uint8 = 4
	ICMPv6EchoRequest     uint8 = 128
	ICMPv6EchoReply       uint8 = 129
	ICMPv6RouterSolicit   uint8 = 133 // RFC 4861
	ICMPv6RouterAdvert    uint8 = 134 // RFC 4861
	ICMPv6NeighborSolicit uint8 = 135 // RFC 4861
	ICMPv6NeighborAdvert  uint8 = 136 // RFC 4861
	ICMPv6Redirect        uint8 = 137 // RFC 4861
)

// ICMPv4 is a view of an ICMP message for IPv4 (RFC 792):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Type      |     Code      |          Checksum             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Rest of header: Identifier | Sequence Number (echo),      |
//	|     unused | Next-Hop MTU (RFC 1191), Pointer | unused, ...    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The checksum covers the whole message and has no pseudo-header. Its
// methods assume ICMPv4HeaderLen bytes, as ParseICMPv4 checks.
type ICMPv4 []byte

// ICMPv4Fields holds the fields ICMPv4.Encode writes.
type ICMPv4Fields struct {
	Type     uint8
	Code     uint8
	Checksum uint16 // written as is
	Rest     uint32 // bytes 4-7; Identifier<<16 | Sequence for echo
}

// ParseICMPv4 checks that b holds an ICMPv4 header and returns b as an
// ICMPv4 view. It returns a *ParseError wrapping ErrTruncated when b is
// shorter than ICMPv4HeaderLen. It does not verify the checksum. The
// returned view aliases b.
func ParseICMPv4(b []byte) (ICMPv4, error) {
	if len(b) < ICMPv4HeaderLen {
		return nil, errICMPv4Short
	}
	return ICMPv4(b), nil
}

// Type returns the message type.
func (h ICMPv4) Type() uint8 { return h[0] }

// Code returns the message code.
func (h ICMPv4) Code() uint8 { return h[1] }

// Checksum returns the Checksum field.
func (h ICMPv4) Checksum() uint16 { return binary.BigEndian.Uint16(h[2:4]) }

// Rest returns bytes 4-7, whose meaning depends on the type.
func (h ICMPv4) Rest() uint32 { return binary.BigEndian.Uint32(h[4:8]) }

// ID returns bytes 4-5, the echo Identifier.
func (h ICMPv4) ID() uint16 { return binary.BigEndian.Uint16(h[4:6]) }

// Sequence returns bytes 6-7, the echo Sequence Number.
func (h ICMPv4) Sequence() uint16 { return binary.BigEndian.Uint16(h[6:8]) }

// MTU returns bytes 6-7, the Next-Hop MTU of a fragmentation-needed
// message (RFC 1191).
func (h ICMPv4) MTU() uint16 { return binary.BigEndian.Uint16(h[6:8]) }

// Pointer returns byte 4, the offending octet of a parameter problem.
func (h ICMPv4) Pointer() uint8 { return h[4] }

// Payload returns the bytes after the 8-byte header. The returned slice
// aliases h.
func (h ICMPv4) Payload() []byte { return h[ICMPv4HeaderLen:] }

// SetType writes the message type.
func (h ICMPv4) SetType(t uint8) { h[0] = t }

// SetCode writes the message code.
func (h ICMPv4) SetCode(c uint8) { h[1] = c }

// SetChecksum writes the Checksum field.
func (h ICMPv4) SetChecksum(c uint16) { binary.BigEndian.PutUint16(h[2:4], c) }

// SetRest writes bytes 4-7.
func (h ICMPv4) SetRest(r uint32) { binary.BigEndian.PutUint32(h[4:8], r) }

// SetID writes the echo Identifier.
func (h ICMPv4) SetID(id uint16) { binary.BigEndian.PutUint16(h[4:6], id) }

// SetSequence writes the echo Sequence Number.
func (h ICMPv4) SetSequence(s uint16) { binary.BigEndian.PutUint16(h[6:8], s) }

// Encode writes the header f describes into h[:ICMPv4HeaderLen]. It does not
// compute the checksum: once the payload is in place, call
// SetChecksum(ComputeChecksum()).
func (h ICMPv4) Encode(f *ICMPv4Fields) {
	_ = h[ICMPv4HeaderLen-1]
	h[0], h[1] = f.Type, f.Code
	binary.BigEndian.PutUint16(h[2:4], f.Checksum)
	binary.BigEndian.PutUint32(h[4:8], f.Rest)
}

// ComputeChecksum returns the value the Checksum field must hold for all of
// h with the checksum field taken as zero.
func (h ICMPv4) ComputeChecksum() uint16 { return ^Checksum(h[4:], Checksum(h[0:2], 0)) }

// ChecksumValid reports whether all of h sums to 0xffff.
func (h ICMPv4) ChecksumValid() bool { return Checksum(h, 0) == 0xffff }

// ICMPv6 is a view of an ICMPv6 message (RFC 4443):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Type      |     Code      |          Checksum             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  First word of the body: Identifier | Sequence (echo), MTU     |
//	|  (packet too big), Pointer (parameter problem), unused        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The checksum covers the IPv6 pseudo-header (RFC 8200 section 8.1, next
// header 58) and the whole message. Its methods assume ICMPv6HeaderLen
// bytes, as ParseICMPv6 checks.
type ICMPv6 []byte

// ICMPv6Fields holds the fields ICMPv6.Encode writes.
type ICMPv6Fields struct {
	Type     uint8
	Code     uint8
	Checksum uint16 // written as is
	Rest     uint32 // bytes 4-7; Identifier<<16 | Sequence for echo, the MTU for packet too big
}

// ParseICMPv6 checks that b holds an ICMPv6 header of ICMPv6HeaderLen bytes
// and returns b as an ICMPv6 view. It returns a *ParseError wrapping
// ErrTruncated when b is shorter. It does not verify the checksum. The
// returned view aliases b.
func ParseICMPv6(b []byte) (ICMPv6, error) {
	if len(b) < ICMPv6HeaderLen {
		return nil, errICMPv6Short
	}
	return ICMPv6(b), nil
}

// Type returns the message type.
func (h ICMPv6) Type() uint8 { return h[0] }

// Code returns the message code.
func (h ICMPv6) Code() uint8 { return h[1] }

// Checksum returns the Checksum field.
func (h ICMPv6) Checksum() uint16 { return binary.BigEndian.Uint16(h[2:4]) }

// Rest returns bytes 4-7, whose meaning depends on the type.
func (h ICMPv6) Rest() uint32 { return binary.BigEndian.Uint32(h[4:8]) }

// ID returns bytes 4-5, the echo Identifier.
func (h ICMPv6) ID() uint16 { return binary.BigEndian.Uint16(h[4:6]) }

// Sequence returns bytes 6-7, the echo Sequence Number.
func (h ICMPv6) Sequence() uint16 { return binary.BigEndian.Uint16(h[6:8]) }

// MTU returns bytes 4-7, the MTU of a packet-too-big message.
func (h ICMPv6) MTU() uint32 { return binary.BigEndian.Uint32(h[4:8]) }

// Pointer returns bytes 4-7, the offending octet of a parameter problem.
func (h ICMPv6) Pointer() uint32 { return binary.BigEndian.Uint32(h[4:8]) }

// Payload returns the bytes after the 8-byte header. The returned slice
// aliases h.
func (h ICMPv6) Payload() []byte { return h[ICMPv6HeaderLen:] }

// SetType writes the message type.
func (h ICMPv6) SetType(t uint8) { h[0] = t }

// SetCode writes the message code.
func (h ICMPv6) SetCode(c uint8) { h[1] = c }

// SetChecksum writes the Checksum field.
func (h ICMPv6) SetChecksum(c uint16) { binary.BigEndian.PutUint16(h[2:4], c) }

// SetRest writes bytes 4-7.
func (h ICMPv6) SetRest(r uint32) { binary.BigEndian.PutUint32(h[4:8], r) }

// SetID writes the echo Identifier.
func (h ICMPv6) SetID(id uint16) { binary.BigEndian.PutUint16(h[4:6], id) }

// SetSequence writes the echo Sequence Number.
func (h ICMPv6) SetSequence(s uint16) { binary.BigEndian.PutUint16(h[6:8], s) }

// Encode writes the header f describes into h[:ICMPv6HeaderLen]. It does not
// compute the checksum: once the payload is in place, call
// SetChecksum(ComputeChecksum(pseudo)).
func (h ICMPv6) Encode(f *ICMPv6Fields) {
	_ = h[ICMPv6HeaderLen-1]
	h[0], h[1] = f.Type, f.Code
	binary.BigEndian.PutUint16(h[2:4], f.Checksum)
	binary.BigEndian.PutUint32(h[4:8], f.Rest)
}

// ComputeChecksum returns the value the Checksum field must hold for all of
// h with the checksum field taken as zero, given the pseudo-header sum
// (IPv6.PseudoHeaderChecksum(IPProtoICMPv6, uint32(len(h)))).
func (h ICMPv6) ComputeChecksum(pseudo uint16) uint16 {
	return ^Checksum(h[4:], Checksum(h[0:2], pseudo))
}

// ChecksumValid reports whether h and the pseudo-header sum add to 0xffff.
func (h ICMPv6) ChecksumValid(pseudo uint16) bool { return Checksum(h, pseudo) == 0xffff }
