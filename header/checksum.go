package header

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// Checksum returns the 16-bit ones' complement sum (RFC 1071) of b added to
// initial, folded to 16 bits and not complemented: the value the kernel's
// csum_partial followed by a fold computes. The field stored in a header is
// the complement of a sum; to verify a header, sum it with its checksum field
// in place and compare with 0xffff.
//
// b is taken to start at an even offset of the data being checksummed (its
// first byte is the high byte of a 16-bit word); an odd-length b is padded
// with one zero byte at the end. To chain sums over pieces that do not all
// start at even offsets, use ChecksumBlockAdd. Checksum of an empty slice is
// initial; the sum is 0 only when initial and every byte are zero.
//
// Checksum adds 8 bytes at a time into a 64-bit accumulator with
// end-around carries and swaps bytes once at the end, which RFC 1071 section
// 2(B) allows because the sum does not depend on byte order. It does not
// allocate.
func Checksum(b []byte, initial uint16) uint16 {
	return ChecksumCombine(initial, sum(b))
}

// sum returns the folded ones' complement sum of b read as big-endian 16-bit
// words. It loads little-endian (a plain load on the common hosts), sums
// 64-bit lanes with carries, folds, and swaps the two bytes of the result.
func sum(b []byte) uint16 {
	var s, c uint64
	for len(b) >= 64 {
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[0:8]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[8:16]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[16:24]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[24:32]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[32:40]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[40:48]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[48:56]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[56:64]), c)
		b = b[64:]
	}
	for len(b) >= 8 {
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b), c)
		b = b[8:]
	}
	// Fold the pending carry in; a second carry out is impossible because
	// a first one leaves s == 0.
	s, c = bits.Add64(s, 0, c)
	s += c
	// The tail (0 to 7 bytes) goes into separate 16-bit lanes of t. Which
	// lane does not matter, since 2^16 = 1 modulo 0xffff and folding adds
	// the lanes; what matters is that an even-offset byte is a lane's low
	// byte, as in the little-endian loads above.
	var t uint64
	if len(b) >= 4 {
		t = uint64(binary.LittleEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		t += uint64(binary.LittleEndian.Uint16(b)) << 32
		b = b[2:]
	}
	if len(b) == 1 {
		// The lone last byte is the high byte of a big-endian word padded
		// with zero (RFC 1071), so the low byte of a little-endian lane.
		t += uint64(b[0]) << 48
	}
	s, c = bits.Add64(s, t, 0)
	s += c
	return bits.ReverseBytes16(fold64(s))
}

// fold64 folds a 64-bit ones' complement sum to 16 bits with end-around
// carries.
func fold64(s uint64) uint16 {
	s = (s & 0xffffffff) + (s >> 32) // at most 33 bits
	s = (s & 0xffffffff) + (s >> 32) // at most 32 bits
	s = (s & 0xffff) + (s >> 16)     // at most 17 bits
	s = (s & 0xffff) + (s >> 16)     // 16 bits
	return uint16(s)
}

// ChecksumFold folds a wider ones' complement sum, such as 16-bit words or
// partial sums added into a uint64 (up to 2^48 of them cannot overflow), to
// 16 bits with end-around carries. The result is not complemented. It follows
// the fold in the kernel's csum_fold without its final complement.
func ChecksumFold(s uint64) uint16 { return fold64(s) }

// ChecksumCombine returns the ones' complement sum of two 16-bit sums a and
// b, as RFC 1071 section 2(A) adds partial sums. Both sums must cover data
// starting at even offsets (or use ChecksumBlockAdd). It follows the kernel's
// csum_add.
func ChecksumCombine(a, b uint16) uint16 {
	s := uint32(a) + uint32(b)
	return uint16(s + s>>16)
}

// ChecksumBlockAdd adds to sum the sum block of a block of data that starts
// at byte offset off of the whole being checksummed. When off is odd the
// block's bytes sit in the other halves of the 16-bit words, so block is
// byte-swapped before adding (RFC 1071 section 2(B)). It follows the kernel's
// csum_block_add. Chaining
//
//	s := Checksum(b[:n], 0)
//	s = ChecksumBlockAdd(s, Checksum(b[n:], 0), n)
//
// equals Checksum(b, 0) for every n, odd or even.
func ChecksumBlockAdd(sum, block uint16, off int) uint16 {
	if off&1 != 0 {
		block = bits.ReverseBytes16(block)
	}
	return ChecksumCombine(sum, block)
}

// ChecksumUpdate16 returns the checksum field value after a 16-bit word
// covered by checksum check changes from old to new, per RFC 1624 equation 3:
// HC' = ~(~HC + ~m + m'). The word must sit at an even offset of the
// checksummed data (every 16-bit header field does). It follows the kernel's
// csum_replace2. For UDP, callers keep a zero (absent) checksum zero and store
// a result of 0 as 0xffff (RFC 768).
func ChecksumUpdate16(check, old, new uint16) uint16 {
	s := uint64(^check) + uint64(^old) + uint64(new)
	return ^fold64(s)
}

// ChecksumUpdate32 is ChecksumUpdate16 for a 32-bit field at an even offset,
// such as an IPv4 address rewritten by NAT (in the IP header and in the
// TCP or UDP pseudo-header). It follows the kernel's csum_replace4.
func ChecksumUpdate32(check uint16, old, new uint32) uint16 {
	o := ^old
	s := uint64(^check) + uint64(o>>16) + uint64(o&0xffff) + uint64(new>>16) + uint64(new&0xffff)
	return ^fold64(s)
}

// ChecksumUpdateBytes is ChecksumUpdate16 for a field of any length starting
// at an even offset, such as a 16-byte IPv6 address (the kernel's
// inet_proto_csum_replace16). old and new must have the same length;
// ChecksumUpdateBytes panics otherwise.
func ChecksumUpdateBytes(check uint16, old, new []byte) uint16 {
	if len(old) != len(new) {
		panic("header: ChecksumUpdateBytes: old and new differ in length")
	}
	s := uint64(^check) + uint64(^sum(old)) + uint64(sum(new))
	return ^fold64(s)
}

// ChecksumUpdateAddr returns a complete UDP or TCP checksum field (udp
// says which) after an address of its pseudo-header changes from old to
// new: a NAT rewrite of the IP source or destination, which the transport
// checksum covers through the pseudo-header (RFC 768, RFC 9293 section
// 3.1, RFC 8200 section 8.1). It follows the kernel's
// inet_proto_csum_replace4 and inet_proto_csum_replace16 with a
// pseudo-header, and RFC 768's rules for UDP: a zero field (no checksum,
// over IPv4) stays zero, and a result of zero is stored as 0xffff. A
// CHECKSUM_PARTIAL field, which holds the pseudo-header sum itself, is not
// for it: write the new PseudoHeaderChecksumIPv4 or IPv6 instead. The IPv4
// header's own checksum is not its work: update that with
// ChecksumUpdate32, or recompute it. old and new must be of one family
// (IPv4-mapped IPv6 addresses count as IPv4); it panics otherwise, or for
// the zero Addr. It does not allocate.
func ChecksumUpdateAddr(check uint16, old, new netip.Addr, udp bool) uint16 {
	o, n := old.Unmap(), new.Unmap()
	v4 := o.Is4() && n.Is4()
	if !v4 && !(o.Is6() && n.Is6()) {
		panic("header: ChecksumUpdateAddr: old " + o.String() + " and new " + n.String() + " are not addresses of one family")
	}
	if udp && check == 0 {
		return 0
	}
	if v4 {
		a, b := o.As4(), n.As4()
		check = ChecksumUpdate32(check, binary.BigEndian.Uint32(a[:]), binary.BigEndian.Uint32(b[:]))
	} else {
		a, b := o.As16(), n.As16()
		check = ChecksumUpdateBytes(check, a[:], b[:])
	}
	if udp && check == 0 {
		return 0xffff
	}
	return check
}

// PseudoHeaderChecksumIPv4 returns the sum of the IPv4 pseudo-header that
// UDP (RFC 768), TCP (RFC 9293 section 3.1) and UDP-Lite prepend to their
// checksum: source and destination address, zero, protocol and the
// transport length in bytes (header plus payload). The result is a sum, not
// complemented, ready as Checksum's initial value; it equals the kernel's
// csum_tcpudp_nofold folded.
func PseudoHeaderChecksumIPv4(src, dst [4]byte, proto uint8, length uint16) uint16 {
	return pseudo4(src[:], dst[:], proto, uint32(length))
}

// PseudoHeaderChecksumIPv6 returns the sum of the IPv6 pseudo-header of
// RFC 8200 section 8.1 (source, destination, 32-bit upper-layer packet
// length in bytes, three zero bytes, next header), used by UDP, TCP and
// ICMPv6 (RFC 4443 section 2.3). The result is a sum, not complemented; it
// equals the kernel's csum_ipv6_magic before the complement.
func PseudoHeaderChecksumIPv6(src, dst [16]byte, proto uint8, length uint32) uint16 {
	return pseudo6(src[:], dst[:], proto, length)
}

func pseudo4(src, dst []byte, proto uint8, length uint32) uint16 {
	s := uint64(binary.BigEndian.Uint32(src)) + uint64(binary.BigEndian.Uint32(dst)) +
		uint64(proto) + uint64(length)
	return fold64(s)
}

func pseudo6(src, dst []byte, proto uint8, length uint32) uint16 {
	s := uint64(binary.BigEndian.Uint32(src[0:4])) + uint64(binary.BigEndian.Uint32(src[4:8])) +
		uint64(binary.BigEndian.Uint32(src[8:12])) + uint64(binary.BigEndian.Uint32(src[12:16])) +
		uint64(binary.BigEndian.Uint32(dst[0:4])) + uint64(binary.BigEndian.Uint32(dst[4:8])) +
		uint64(binary.BigEndian.Uint32(dst[8:12])) + uint64(binary.BigEndian.Uint32(dst[12:16])) +
		uint64(proto) + uint64(length)
	return fold64(s)
}

// FinishChecksum completes a CHECKSUM_PARTIAL packet held in one contiguous
// slice, as the kernel's skb_checksum_help does: it sums b from csumStart to
// the end, and stores the complement of the folded sum at
// csumStart+csumOffset, big-endian. A result of 0 is stored as 0xffff (the
// kernel's CSUM_MANGLED_0: for UDP a zero would mean "no checksum", RFC 768;
// for TCP and ICMPv6 the two are the same value in ones' complement).
//
// As in the kernel and virtio_net_hdr (VIRTIO_NET_HDR_F_NEEDS_CSUM), the
// checksum field must already hold the pseudo-header sum
// (PseudoHeaderChecksumIPv4/IPv6, not complemented), and csumOffset counts
// from csumStart: 6 for UDP, 16 for TCP, 2 for ICMPv6. FinishChecksum
// returns ErrBadChecksumOffset, and leaves b unchanged, when csumStart or
// csumOffset is negative, csumStart is not inside b, or the 2-byte field runs
// past its end. It does not allocate.
func FinishChecksum(b []byte, csumStart, csumOffset int) error {
	if csumStart < 0 || csumOffset < 0 || csumStart >= len(b) || csumOffset > len(b)-csumStart-2 {
		return ErrBadChecksumOffset
	}
	c := ^Checksum(b[csumStart:], 0)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(b[csumStart+csumOffset:], c)
	return nil
}
