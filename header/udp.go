package header

import "encoding/binary"

// UDPHeaderLen is the length of a UDP header, RFC 768.
const UDPHeaderLen = 8

// UDP is a view of a UDP datagram (RFC 768) starting at its header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Source Port          |       Destination Port        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             Length            |           Checksum            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Length counts header and payload in bytes. The checksum covers the
// pseudo-header, the header and the payload; 0 means "none" over IPv4 and a
// computed 0 is sent as 0xffff. Over IPv6 the checksum is mandatory (RFC 8200
// section 8.1) except for tunnels (RFC 6935).
//
// A view does not copy. Its methods assume UDPHeaderLen bytes, and Payload
// and the checksum methods the Length too, as ParseUDP checks.
type UDP []byte

// UDPFields holds the fields UDP.Encode writes.
type UDPFields struct {
	SourcePort      uint16
	DestinationPort uint16
	Length          uint16 // bytes, header and payload
	Checksum        uint16 // written as is: 0, or the pseudo-header sum for CHECKSUM_PARTIAL
}

// ParseUDP checks b the way the kernel's __udp4_lib_rcv does and returns it
// as a UDP view trimmed to its Length. It returns a *ParseError wrapping
// ErrTruncated when b is shorter than 8 bytes or than Length, and one
// wrapping ErrBadLength when Length is below 8. This includes the Length 0
// of RFC 2675 jumbograms, which are not supported: over IPv6 the kernel's
// __udp6_lib_rcv takes a Length of 0 on any datagram as "to the end of the
// payload", where ParseUDP, ParseFrame and the sinks built on them refuse
// it. It does not verify the
// checksum. The returned view aliases b. It does not allocate.
func ParseUDP(b []byte) (UDP, error) {
	n, err := checkUDP(b, len(b))
	if err != nil {
		return nil, err
	}
	return UDP(b[:n]), nil
}

// checkUDP makes ParseUDP's checks on b, the first bytes of a datagram of
// up to avail bytes: the header must lie in b, the Length in avail. It
// returns the Length.
func checkUDP(b []byte, avail int) (int, error) {
	if len(b) < UDPHeaderLen {
		return 0, short(UDPHeaderLen, avail, errUDPShort)
	}
	n := int(binary.BigEndian.Uint16(b[4:6]))
	if n < UDPHeaderLen {
		return 0, errUDPLenSmall
	}
	if avail < n {
		return 0, errUDPLenShort
	}
	return n, nil
}

// SourcePort returns the source port.
func (h UDP) SourcePort() uint16 { return binary.BigEndian.Uint16(h[0:2]) }

// DestinationPort returns the destination port.
func (h UDP) DestinationPort() uint16 { return binary.BigEndian.Uint16(h[2:4]) }

// Length returns the Length field: header and payload, in bytes.
func (h UDP) Length() uint16 { return binary.BigEndian.Uint16(h[4:6]) }

// Checksum returns the Checksum field.
func (h UDP) Checksum() uint16 { return binary.BigEndian.Uint16(h[6:8]) }

// Payload returns the bytes from 8 to Length. The returned slice aliases h.
func (h UDP) Payload() []byte { return h[UDPHeaderLen:h.Length()] }

// SetSourcePort writes the source port.
func (h UDP) SetSourcePort(p uint16) { binary.BigEndian.PutUint16(h[0:2], p) }

// SetDestinationPort writes the destination port.
func (h UDP) SetDestinationPort(p uint16) { binary.BigEndian.PutUint16(h[2:4], p) }

// SetLength writes the Length field.
func (h UDP) SetLength(n uint16) { binary.BigEndian.PutUint16(h[4:6], n) }

// SetChecksum writes the Checksum field.
func (h UDP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(h[6:8], c) }

// Encode writes the header f describes into h[:UDPHeaderLen]. It does not
// compute the checksum: once the payload is in place, call
// SetChecksum(ComputeChecksum(pseudo)).
func (h UDP) Encode(f *UDPFields) {
	_ = h[UDPHeaderLen-1]
	binary.BigEndian.PutUint16(h[0:2], f.SourcePort)
	binary.BigEndian.PutUint16(h[2:4], f.DestinationPort)
	binary.BigEndian.PutUint16(h[4:6], f.Length)
	binary.BigEndian.PutUint16(h[6:8], f.Checksum)
}

// ComputeChecksum returns the value the Checksum field must hold for the
// datagram's Length bytes with the checksum field taken as zero, given the
// pseudo-header sum (IPv4.PseudoHeaderChecksum(IPProtoUDP, Length), or the
// IPv6 one). A result of 0 is returned as 0xffff (RFC 768). It does not
// write it; see SetChecksum.
func (h UDP) ComputeChecksum(pseudo uint16) uint16 {
	n := h.Length()
	c := ^Checksum(h[8:n], Checksum(h[0:6], pseudo))
	if c == 0 {
		c = 0xffff
	}
	return c
}

// ChecksumValid reports whether the datagram's Length bytes and the
// pseudo-header sum add to 0xffff. It does not treat a zero Checksum field
// specially; the caller decides whether zero means "none" (IPv4) or is an
// error (IPv6), as Frame.VerifyChecksum does.
func (h UDP) ChecksumValid(pseudo uint16) bool {
	return Checksum(h[:h.Length()], pseudo) == 0xffff
}
