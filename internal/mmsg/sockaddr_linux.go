//go:build linux

package mmsg

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// SockaddrMax is the size in bytes of the largest socket address PutSockaddr
// writes: a struct sockaddr_in6.
const SockaddrMax = unix.SizeofSockaddrInet6

// PutSockaddr writes ap into name as the struct sockaddr for a socket of the
// given family (unix.AF_INET or unix.AF_INET6) and returns its length: 16
// bytes of sockaddr_in (family, port in network order, address, zero) or 28
// of sockaddr_in6 (family, port, flowinfo 0, address, scope id 0), as ip(7)
// and ipv6(7) lay them out. An IPv4 address for an AF_INET6 socket is written
// IPv4-mapped (::ffff:a.b.c.d). It returns 0, writing nothing useful, when ap
// is invalid, when an IPv6 address is given to an AF_INET socket, or when
// name is shorter than the address. It allocates nothing.
func PutSockaddr(name []byte, family int, ap netip.AddrPort) int {
	a := ap.Addr()
	if !a.IsValid() {
		return 0
	}
	switch family {
	case unix.AF_INET:
		if !a.Unmap().Is4() || len(name) < unix.SizeofSockaddrInet4 {
			return 0
		}
		name = name[:unix.SizeofSockaddrInet4]
		binary.NativeEndian.PutUint16(name[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(name[2:], ap.Port())
		a4 := a.Unmap().As4()
		copy(name[4:8], a4[:])
		clear(name[8:])
		return unix.SizeofSockaddrInet4
	case unix.AF_INET6:
		if len(name) < unix.SizeofSockaddrInet6 {
			return 0
		}
		name = name[:unix.SizeofSockaddrInet6]
		binary.NativeEndian.PutUint16(name[0:], unix.AF_INET6)
		binary.BigEndian.PutUint16(name[2:], ap.Port())
		clear(name[4:8])
		a16 := a.As16()
		copy(name[8:24], a16[:])
		clear(name[24:28])
		return unix.SizeofSockaddrInet6
	}
	return 0
}

// AddrPort returns the address in sa, a struct sockaddr_in or sockaddr_in6
// filled in by recvmmsg(2) (a Batch's Names slot) whose length the kernel gave
// as namelen. An IPv4-mapped IPv6 address is returned as IPv4; the IPv6 scope
// id (zone) is not kept, so that nothing is allocated. It returns the zero
// AddrPort for an address of another family or a short length.
func AddrPort(sa *unix.RawSockaddrInet6, namelen uint32) netip.AddrPort {
	switch {
	case sa.Family == unix.AF_INET && namelen >= unix.SizeofSockaddrInet4:
		// sockaddr_in's address occupies the bytes of sockaddr_in6's flowinfo.
		var a4 [4]byte
		binary.NativeEndian.PutUint32(a4[:], sa.Flowinfo)
		return netip.AddrPortFrom(netip.AddrFrom4(a4), ntohs(sa.Port))
	case sa.Family == unix.AF_INET6 && namelen >= unix.SizeofSockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), ntohs(sa.Port))
	}
	return netip.AddrPort{}
}

// ntohs converts a port as the kernel stores it (network order, read as a
// native integer) to a number.
func ntohs(p uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], p)
	return binary.BigEndian.Uint16(b[:])
}
