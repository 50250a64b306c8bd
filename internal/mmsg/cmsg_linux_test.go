//go:build linux

package mmsg

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCmsgRoundTrip writes control messages with PutCmsgUint16 and x/sys's
// UnixRights layout and reads them back with NextCmsg.
func TestCmsgRoundTrip(t *testing.T) {
	b := make([]byte, 128)
	n := PutCmsgUint16(b, unix.SOL_UDP, unix.UDP_SEGMENT, 1400)
	if n != unix.CmsgSpace(2) {
		t.Fatalf("PutCmsgUint16 used %d bytes, want %d", n, unix.CmsgSpace(2))
	}
	// A second message, as the kernel would lay it out: SCM_RIGHTS with two
	// descriptors.
	rights := unix.UnixRights(7, 9)
	copy(b[n:], rights)
	all := b[:n+len(rights)]

	level, typ, data, rest, ok := NextCmsg(all)
	if !ok || level != unix.SOL_UDP || typ != unix.UDP_SEGMENT || CmsgInt(data) != 1400 {
		t.Fatalf("first: ok %v level %d type %d data %v", ok, level, typ, data)
	}
	level, typ, data, rest, ok = NextCmsg(rest)
	if !ok || level != unix.SOL_SOCKET || typ != unix.SCM_RIGHTS || len(data) != 8 {
		t.Fatalf("second: ok %v level %d type %d data %v", ok, level, typ, data)
	}
	if _, _, _, _, ok = NextCmsg(rest); ok {
		t.Fatalf("a third message in %d bytes", len(rest))
	}
	if PutCmsgUint16(b[:unix.CmsgSpace(2)-1], 1, 2, 3) != 0 {
		t.Error("PutCmsgUint16 wrote into a short buffer")
	}
}

// FuzzNextCmsg feeds NextCmsg arbitrary control buffers: it must never
// panic, and what it returns must lie inside its input and shrink it;
// CmsgInt and PktinfoAddr read each message's data without panicking.
func FuzzNextCmsg(f *testing.F) {
	b := make([]byte, 64)
	n := PutCmsgUint16(b, unix.SOL_UDP, unix.UDP_GRO, 1200)
	f.Add(b[:n])
	f.Add(append(b[:n:n], unix.UnixRights(3)...))
	f.Add([]byte{})
	f.Add(make([]byte, unix.SizeofCmsghdr))
	f.Add(unix.PktInfo4(&unix.Inet4Pktinfo{Spec_dst: [4]byte{127, 0, 0, 2}}))
	f.Add(append(b[:n:n], unix.PktInfo6(&unix.Inet6Pktinfo{Addr: netip.IPv6Loopback().As16()})...))
	f.Fuzz(func(t *testing.T, in []byte) {
		rest := in
		for i := 0; ; i++ {
			if i > len(in) {
				t.Fatalf("more messages than bytes in %x", in)
			}
			level, typ, data, next, ok := NextCmsg(rest)
			if !ok {
				return
			}
			if len(next) >= len(rest) || len(data) > len(rest) {
				t.Fatalf("no progress: %d bytes left of %d, data %d", len(next), len(rest), len(data))
			}
			CmsgInt(data)
			if a, ok := PktinfoAddr(level, typ, data); ok && !a.IsValid() {
				t.Fatalf("PktinfoAddr took %x as the zero Addr", data)
			}
			rest = next
		}
	})
}

// TestSockaddr writes addresses with PutSockaddr, has the kernel check them
// by binding and reading them back (getsockname), and reads the kernel's
// layout with AddrPort.
func TestSockaddr(t *testing.T) {
	for _, tc := range []struct {
		family int
		ap     string
		n      int
	}{
		{unix.AF_INET, "127.0.0.1:0", unix.SizeofSockaddrInet4},
		{unix.AF_INET6, "[::1]:0", unix.SizeofSockaddrInet6},
		{unix.AF_INET6, "127.0.0.1:0", unix.SizeofSockaddrInet6}, // IPv4-mapped
	} {
		ap := netip.MustParseAddrPort(tc.ap)
		var sa [SockaddrMax]byte
		if n := PutSockaddr(sa[:], tc.family, ap); n != tc.n {
			t.Fatalf("%v: PutSockaddr wrote %d bytes, want %d", ap, n, tc.n)
		}
		fd, err := unix.Socket(tc.family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if tc.family == unix.AF_INET6 {
			unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
		}
		if err := Bind(fd, sa[:tc.n]); err != nil {
			t.Fatalf("bind %v: %v", ap, err)
		}
		got, err := unix.Getsockname(fd)
		if err != nil {
			t.Fatal(err)
		}
		var port int
		switch got := got.(type) {
		case *unix.SockaddrInet4:
			port = got.Port
		case *unix.SockaddrInet6:
			port = got.Port
		}
		// AddrPort reads the kernel's layout: fill one as recvmsg would.
		var raw unix.RawSockaddrInet6
		want := netip.AddrPortFrom(ap.Addr(), uint16(port))
		PutSockaddr(sa[:], tc.family, want)
		rawFrom(&raw, sa[:tc.n])
		if a := AddrPort(&raw, uint32(tc.n)); a != want {
			t.Errorf("AddrPort: %v, want %v", a, want)
		}
		if a := AddrPort(&raw, 3); a.IsValid() {
			t.Errorf("AddrPort of a 3-byte address: %v", a)
		}
	}
	var sa [SockaddrMax]byte
	if PutSockaddr(sa[:], unix.AF_INET, netip.MustParseAddrPort("[::1]:1")) != 0 {
		t.Error("PutSockaddr wrote an IPv6 address for an AF_INET socket")
	}
	if PutSockaddr(sa[:], unix.AF_INET6, netip.AddrPort{}) != 0 {
		t.Error("PutSockaddr wrote the zero AddrPort")
	}
}

// rawFrom copies a struct sockaddr held as bytes into raw, field by field in
// the kernel's layout (the fields are read as native integers, as the
// kernel writes them through the C struct).
func rawFrom(raw *unix.RawSockaddrInet6, b []byte) {
	*raw = unix.RawSockaddrInet6{}
	raw.Family = binary.NativeEndian.Uint16(b[0:])
	raw.Port = binary.NativeEndian.Uint16(b[2:])
	if len(b) >= 8 {
		raw.Flowinfo = binary.NativeEndian.Uint32(b[4:])
	}
	if len(b) >= 24 {
		copy(raw.Addr[:], b[8:24])
	}
}

// TestCmsgPktinfo checks PutCmsgPktinfo against x/sys's own IP_PKTINFO and
// IPV6_PKTINFO builders byte for byte, and PktinfoAddr against the structs
// they carry.
func TestCmsgPktinfo(t *testing.T) {
	for _, s := range []string{"127.0.0.2", "::ffff:198.18.0.1", "::1", "fd00::7"} {
		a := netip.MustParseAddr(s)
		var want []byte
		if a.Unmap().Is4() {
			want = unix.PktInfo4(&unix.Inet4Pktinfo{Spec_dst: a.Unmap().As4()})
		} else {
			want = unix.PktInfo6(&unix.Inet6Pktinfo{Addr: a.As16()})
		}
		b := make([]byte, PktinfoSpace+8)
		for i := range b {
			b[i] = 0xa5 // stale bytes that padding must not keep
		}
		n := PutCmsgPktinfo(b, a)
		if n != len(want) || string(b[:n]) != string(want) {
			t.Errorf("%v: PutCmsgPktinfo wrote %x, x/sys %x", a, b[:n], want)
		}
		if PutCmsgPktinfo(b[:n-1], a) != 0 {
			t.Errorf("%v: PutCmsgPktinfo wrote into %d bytes", a, n-1)
		}
		level, typ, data, _, ok := NextCmsg(b[:n])
		if !ok {
			t.Fatalf("%v: NextCmsg found no message in %x", a, b[:n])
		}
		got, ok := PktinfoAddr(level, typ, data)
		if !ok || got != a.Unmap() {
			t.Errorf("%v: PktinfoAddr gave %v, %v", a, got, ok)
		}
		if _, ok := PktinfoAddr(level, typ, data[:len(data)-1]); ok {
			t.Errorf("%v: PktinfoAddr took a short message", a)
		}
	}
	if PutCmsgPktinfo(make([]byte, 64), netip.Addr{}) != 0 {
		t.Error("PutCmsgPktinfo wrote the zero Addr")
	}
	if _, ok := PktinfoAddr(unix.SOL_UDP, unix.UDP_GRO, make([]byte, 4)); ok {
		t.Error("PktinfoAddr took UDP_GRO")
	}
}
