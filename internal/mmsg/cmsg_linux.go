//go:build linux

package mmsg

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// cmsghdr is struct cmsghdr: cmsg_len (size_t), cmsg_level (int), cmsg_type
// (int), then the data, each header aligned to size_t (cmsg(3)).
const cmsgHdrLen = unix.SizeofCmsghdr

// PutCmsgUint16 writes one control message (cmsg(3)) of the given level and
// type holding v as a native 16-bit integer, such as UDP_SEGMENT's segment
// size, at the start of b, and returns the bytes used: CMSG_SPACE(2), 24 on
// 64-bit Linux (16 on 32-bit). It returns 0 when b is too short.
func PutCmsgUint16(b []byte, level, typ int32, v uint16) int {
	n := unix.CmsgSpace(2)
	if len(b) < n {
		return 0
	}
	putCmsgHdr(b, level, typ, 2)
	binary.NativeEndian.PutUint16(b[cmsgHdrLen:], v)
	clear(b[cmsgHdrLen+2 : n])
	return n
}

func putCmsgHdr(b []byte, level, typ int32, datalen int) {
	if unix.SizeofPtr == 8 {
		binary.NativeEndian.PutUint64(b[0:], uint64(unix.CmsgLen(datalen)))
	} else {
		binary.NativeEndian.PutUint32(b[0:], uint32(unix.CmsgLen(datalen)))
	}
	binary.NativeEndian.PutUint32(b[unix.SizeofPtr:], uint32(level))
	binary.NativeEndian.PutUint32(b[unix.SizeofPtr+4:], uint32(typ))
}

// NextCmsg parses the first control message in b, the part of a control
// buffer that recvmsg(2) filled (msg_controllen bytes). It returns the
// message's level, type and data, the rest of b after it, and ok false when b
// holds no complete message. Lengths come from the kernel but are checked
// against b all the same; it allocates nothing.
//
//	for level, typ, data, rest, ok := NextCmsg(b); ok; level, typ, data, rest, ok = NextCmsg(rest) { ... }
func NextCmsg(b []byte) (level, typ int32, data, rest []byte, ok bool) {
	if len(b) < cmsgHdrLen {
		return 0, 0, nil, nil, false
	}
	var l uint64
	if unix.SizeofPtr == 8 {
		l = binary.NativeEndian.Uint64(b[0:])
	} else {
		l = uint64(binary.NativeEndian.Uint32(b[0:]))
	}
	if l < cmsgHdrLen || l > uint64(len(b)) {
		return 0, 0, nil, nil, false
	}
	level = int32(binary.NativeEndian.Uint32(b[unix.SizeofPtr:]))
	typ = int32(binary.NativeEndian.Uint32(b[unix.SizeofPtr+4:]))
	data = b[cmsgHdrLen:l:l]
	next := min(uint64(cmsgAlign(int(l))), uint64(len(b)))
	return level, typ, data, b[next:], true
}

// cmsgAlign rounds n up to the alignment of control messages, sizeof(size_t)
// (CMSG_ALIGN).
func cmsgAlign(n int) int { return (n + unix.SizeofPtr - 1) &^ (unix.SizeofPtr - 1) }

// CmsgInt returns the native integer of 1, 2, 4 or 8 bytes in data (the data
// of a control message), or 0 for another length. UDP_GRO carries an int,
// SO_RXQ_OVFL a uint32.
func CmsgInt(data []byte) uint64 {
	switch len(data) {
	case 1:
		return uint64(data[0])
	case 2:
		return uint64(binary.NativeEndian.Uint16(data))
	case 4:
		return uint64(binary.NativeEndian.Uint32(data))
	case 8:
		return binary.NativeEndian.Uint64(data)
	}
	return 0
}

// PktinfoSpace is the most bytes PutCmsgPktinfo writes: CMSG_SPACE of a
// struct in6_pktinfo, 40 on 64-bit Linux (32 on 32-bit).
var PktinfoSpace = unix.CmsgSpace(unix.SizeofInet6Pktinfo)

// PutCmsgPktinfo writes at the start of b the control message that sets a
// datagram's source address to a (ip(7), ipv6(7)): for an IPv4 address (an
// IPv4-mapped one too) IP_PKTINFO at level IPPROTO_IP, a struct in_pktinfo
// (ipi_ifindex int32, ipi_spec_dst, ipi_addr; 12 bytes) with ipi_spec_dst
// set; for an IPv6 address IPV6_PKTINFO at level IPPROTO_IPV6, a struct
// in6_pktinfo (ipi6_addr, then ipi6_ifindex uint32; 20 bytes). The
// interface index is 0: the route picks it. It returns the bytes used,
// CMSG_SPACE of the struct (32 or 40 on 64-bit Linux), or 0 when b is too
// short or a is not valid.
func PutCmsgPktinfo(b []byte, a netip.Addr) int {
	if !a.IsValid() {
		return 0
	}
	level, typ, size, at := int32(unix.IPPROTO_IPV6), int32(unix.IPV6_PKTINFO), unix.SizeofInet6Pktinfo, 0
	a16 := a.As16()
	addr := a16[:]
	if a.Unmap().Is4() {
		level, typ, size, at = unix.IPPROTO_IP, unix.IP_PKTINFO, unix.SizeofInet4Pktinfo, 4
		addr = a16[12:]
	}
	n := unix.CmsgSpace(size)
	if len(b) < n {
		return 0
	}
	putCmsgHdr(b, level, typ, size)
	d := b[cmsgHdrLen:n]
	clear(d)
	copy(d[at:], addr)
	return n
}

// PktinfoAddr returns the local address that a received IP_PKTINFO or
// IPV6_PKTINFO control message carries (the data NextCmsg gave, with its
// level and type): ipi_spec_dst of a struct in_pktinfo, the address of this
// host the datagram came to (for a broadcast, the one the route picks), or
// ipi6_addr of a struct in6_pktinfo, the header's destination; an
// IPv4-mapped one unmapped. ok is false for another message or a short one.
func PktinfoAddr(level, typ int32, data []byte) (a netip.Addr, ok bool) {
	switch {
	case level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
		return netip.AddrFrom4([4]byte(data[4:8])), true
	case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
		return netip.AddrFrom16([16]byte(data[0:16])).Unmap(), true
	}
	return netip.Addr{}, false
}
