package header

import "encoding/binary"

// TCP constants, RFC 9293.
const (
	TCPMinHeaderLen = 20 // header without options, data offset 5
	TCPMaxHeaderLen = 60 // data offset 15, 40 bytes of options

	// Flags, byte 13 of the header (RFC 9293 section 3.1; ECE and CWR from
	// RFC 3168).
	TCPFlagFIN uint8 = 0x01
	TCPFlagSYN uint8 = 0x02
	TCPFlagRST uint8 = 0x04
	TCPFlagPSH uint8 = 0x08
	TCPFlagACK uint8 = 0x10
	TCPFlagURG uint8 = 0x20
	TCPFlagECE uint8 = 0x40
	TCPFlagCWR uint8 = 0x80

	// Option kinds, IANA "tcp-parameters".
	TCPOptionEnd           uint8 = 0 // End of Option List, RFC 9293
	TCPOptionNOP           uint8 = 1 // No-Operation, RFC 9293
	TCPOptionMSS           uint8 = 2 // Maximum Segment Size, length 4, RFC 9293
	TCPOptionWindowScale   uint8 = 3 // Window Scale, length 3, RFC 7323
	TCPOptionSACKPermitted uint8 = 4 // SACK Permitted, length 2, RFC 2018
	TCPOptionSACK          uint8 = 5 // SACK blocks, length 2+8n, RFC 2018
	TCPOptionTimestamp     uint8 = 8 // Timestamps, length 10, RFC 7323
)

// TCP is a view of a TCP segment (RFC 9293) starting at its header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Source Port          |       Destination Port        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Sequence Number                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Acknowledgment Number                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Data |       |C|E|U|A|P|R|S|F|                               |
//	| Offset| Rsrvd |W|C|R|C|S|S|Y|I|            Window             |
//	|       |       |R|E|G|K|H|T|N|N|                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Checksum            |         Urgent Pointer        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Options (Data Offset*4 - 20 bytes)            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Data Offset counts 32-bit words (5 to 15). The segment has no length field
// of its own: its end is the end of the IP payload. The checksum covers the
// pseudo-header, header and payload.
//
// A view does not copy. Its methods assume TCPMinHeaderLen bytes, and
// Options and Payload the Data Offset too, as ParseTCP checks.
type TCP []byte

// TCPFields holds the fields TCP.Encode writes.
type TCPFields struct {
	SourcePort      uint16
	DestinationPort uint16
	Seq             uint32
	Ack             uint32
	Flags           uint8  // TCPFlagSYN | TCPFlagACK, ...
	AE              bool   // the AccECN flag, bit 0 of byte 12 (the kernel's tcphdr ae; RFC 3540's NS before it)
	Window          uint16 // unscaled
	Checksum        uint16 // written as is: 0, or the pseudo-header sum for CHECKSUM_PARTIAL
	Urgent          uint16
	Options         []byte // raw options, at most 40 bytes; zero-padded to a multiple of 4
}

// HeaderLen returns the header length f describes: 20 bytes plus the
// options rounded up to a multiple of 4.
func (f *TCPFields) HeaderLen() int { return TCPMinHeaderLen + (len(f.Options)+3)&^3 }

// ParseTCP checks that b holds a TCP header the way the kernel's tcp_v4_rcv
// does and returns it as a TCP view of all of b (the segment ends where the
// IP payload does). It returns a *ParseError wrapping ErrTruncated when b is
// shorter than 20 bytes or than the Data Offset, and one wrapping
// ErrBadDataOffset when the Data Offset is below 5. Like the kernel it does
// not reject malformed options (tcp_parse_options stops at them); see
// ParseOptions and OptionIterator. It does not verify the checksum. The
// returned view aliases b. It does not allocate.
func ParseTCP(b []byte) (TCP, error) {
	if _, err := checkTCP(b, len(b)); err != nil {
		return nil, err
	}
	return TCP(b), nil
}

// checkTCP makes ParseTCP's checks on b, the first bytes of a segment of
// avail bytes: the header must lie in b. It returns the header length.
func checkTCP(b []byte, avail int) (int, error) {
	if len(b) < TCPMinHeaderLen {
		return 0, short(TCPMinHeaderLen, avail, errTCPShort)
	}
	n := int(b[12]>>4) * 4
	if n < TCPMinHeaderLen {
		return 0, errTCPDataOffset
	}
	if len(b) < n {
		return 0, short(n, avail, errTCPHeader)
	}
	return n, nil
}

// SourcePort returns the source port.
func (h TCP) SourcePort() uint16 { return binary.BigEndian.Uint16(h[0:2]) }

// DestinationPort returns the destination port.
func (h TCP) DestinationPort() uint16 { return binary.BigEndian.Uint16(h[2:4]) }

// Seq returns the sequence number.
func (h TCP) Seq() uint32 { return binary.BigEndian.Uint32(h[4:8]) }

// Ack returns the acknowledgment number.
func (h TCP) Ack() uint32 { return binary.BigEndian.Uint32(h[8:12]) }

// HeaderLen returns the header length in bytes, the Data Offset times 4.
func (h TCP) HeaderLen() int { return int(h[12]>>4) * 4 }

// Flags returns byte 13: CWR, ECE, URG, ACK, PSH, RST, SYN, FIN.
func (h TCP) Flags() uint8 { return h[13] }

// AE returns the AccECN flag, bit 0 of byte 12, between the reserved bits
// and the flags byte (the kernel's tcphdr ae; RFC 3540's NS before it).
func (h TCP) AE() bool { return h[12]&1 != 0 }

// Window returns the window field, unscaled.
func (h TCP) Window() uint16 { return binary.BigEndian.Uint16(h[14:16]) }

// Checksum returns the Checksum field.
func (h TCP) Checksum() uint16 { return binary.BigEndian.Uint16(h[16:18]) }

// Urgent returns the Urgent Pointer.
func (h TCP) Urgent() uint16 { return binary.BigEndian.Uint16(h[18:20]) }

// Options returns the option bytes, between byte 20 and the header length.
// The returned slice aliases h.
func (h TCP) Options() []byte { return h[TCPMinHeaderLen:h.HeaderLen()] }

// Payload returns the bytes after the header. The returned slice aliases h.
func (h TCP) Payload() []byte { return h[h.HeaderLen():] }

// SetSourcePort writes the source port.
func (h TCP) SetSourcePort(p uint16) { binary.BigEndian.PutUint16(h[0:2], p) }

// SetDestinationPort writes the destination port.
func (h TCP) SetDestinationPort(p uint16) { binary.BigEndian.PutUint16(h[2:4], p) }

// SetSeq writes the sequence number.
func (h TCP) SetSeq(v uint32) { binary.BigEndian.PutUint32(h[4:8], v) }

// SetAck writes the acknowledgment number.
func (h TCP) SetAck(v uint32) { binary.BigEndian.PutUint32(h[8:12], v) }

// SetHeaderLen writes the Data Offset as n/4 (n a multiple of 4 from 20 to
// 60), clears the three reserved bits and keeps AE.
func (h TCP) SetHeaderLen(n int) { h[12] = uint8(n/4)<<4 | h[12]&1 }

// SetAE writes the AccECN flag (see AE).
func (h TCP) SetAE(v bool) {
	if v {
		h[12] |= 1
	} else {
		h[12] &^= 1
	}
}

// SetFlags writes byte 13.
func (h TCP) SetFlags(f uint8) { h[13] = f }

// SetWindow writes the window field.
func (h TCP) SetWindow(w uint16) { binary.BigEndian.PutUint16(h[14:16], w) }

// SetChecksum writes the Checksum field.
func (h TCP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(h[16:18], c) }

// SetUrgent writes the Urgent Pointer.
func (h TCP) SetUrgent(u uint16) { binary.BigEndian.PutUint16(h[18:20], u) }

// Encode writes the header f describes, options included, into
// h[:f.HeaderLen()]. It does not compute the checksum: once the payload is
// in place, call SetChecksum(ComputeChecksum(pseudo)). It panics when
// f.Options is longer than 40 bytes (a programming error).
func (h TCP) Encode(f *TCPFields) {
	hl := f.HeaderLen()
	if hl > TCPMaxHeaderLen {
		panic("header: TCP.Encode: options longer than 40 bytes")
	}
	_ = h[hl-1]
	binary.BigEndian.PutUint16(h[0:2], f.SourcePort)
	binary.BigEndian.PutUint16(h[2:4], f.DestinationPort)
	binary.BigEndian.PutUint32(h[4:8], f.Seq)
	binary.BigEndian.PutUint32(h[8:12], f.Ack)
	h[12] = uint8(hl/4) << 4
	h.SetAE(f.AE)
	h[13] = f.Flags
	binary.BigEndian.PutUint16(h[14:16], f.Window)
	binary.BigEndian.PutUint16(h[16:18], f.Checksum)
	binary.BigEndian.PutUint16(h[18:20], f.Urgent)
	n := copy(h[TCPMinHeaderLen:hl], f.Options)
	clear(h[TCPMinHeaderLen+n : hl])
}

// ComputeChecksum returns the value the Checksum field must hold for the
// whole of h with the checksum field taken as zero, given the pseudo-header
// sum (IPv4.PseudoHeaderChecksum(IPProtoTCP, uint16(len(h))), or the IPv6
// one with uint32(len(h))). It
// does not write it; see SetChecksum.
func (h TCP) ComputeChecksum(pseudo uint16) uint16 {
	return ^Checksum(h[18:], Checksum(h[0:16], pseudo))
}

// ChecksumValid reports whether h and the pseudo-header sum add to 0xffff.
func (h TCP) ChecksumValid(pseudo uint16) bool { return Checksum(h, pseudo) == 0xffff }

// TCPOptions holds the options the kernel's tcp_parse_options reads. A Has
// field tells whether the option was present.
type TCPOptions struct {
	MSS           uint16 // Maximum Segment Size, bytes
	WindowScale   uint8  // shift count
	SACKPermitted bool
	TSVal, TSEcr  uint32 // Timestamps

	HasMSS, HasWindowScale, HasTimestamp bool
}

// ParseOptions reads the MSS, Window Scale, SACK Permitted and Timestamps
// options of h, ignoring other kinds and options of the wrong length (as
// tcp_parse_options does). It returns what it read and a *ParseError
// wrapping ErrBadOption when it stopped at a malformed option. It does not
// allocate.
func (h TCP) ParseOptions() (TCPOptions, error) {
	var o TCPOptions
	it := OptionIterator{rest: h.Options()}
	for {
		kind, data, ok := it.Next()
		if !ok {
			break
		}
		switch {
		case kind == TCPOptionMSS && len(data) == 2:
			o.MSS, o.HasMSS = binary.BigEndian.Uint16(data), true
		case kind == TCPOptionWindowScale && len(data) == 1:
			o.WindowScale, o.HasWindowScale = data[0], true
		case kind == TCPOptionSACKPermitted && len(data) == 0:
			o.SACKPermitted = true
		case kind == TCPOptionTimestamp && len(data) == 8:
			o.TSVal, o.TSEcr, o.HasTimestamp = binary.BigEndian.Uint32(data[0:4]), binary.BigEndian.Uint32(data[4:8]), true
		}
	}
	if it.err != nil {
		return o, errTCPOption
	}
	return o, nil
}
