//go:build linux

package mmsg

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// udpSocket returns a UDP socket bound to a loopback port, and its
// address; it is closed when t ends.
func udpSocket(t testing.TB) (int, *unix.SockaddrInet4) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4)
}

func TestSendRecv(t *testing.T) {
	rx, addr := udpSocket(t)
	tx, _ := udpSocket(t)
	if err := unix.Connect(tx, addr); err != nil {
		t.Fatal(err)
	}
	const n = 8
	sb := NewBatch(n, false, 0)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = []byte{byte(i), 1, 2, 3, 4}[:1+i%5]
		sb.Set(i, bufs[i])
	}
	sent, err := Sendmmsg(tx, sb, n, 0)
	if err != nil || sent != n {
		t.Fatalf("sendmmsg: %d %v", sent, err)
	}
	rb := NewBatch(n, true, 64)
	space := make([]byte, n*16)
	for i := range n {
		rb.Set(i, space[i*16:(i+1)*16])
	}
	got := 0
	for got < n {
		rb.PrepareRecv(n)
		k, err := Recvmmsg(rx, rb, n, unix.MSG_WAITFORONE)
		if err != nil {
			t.Fatal(err)
		}
		for i := range k {
			if int(rb.Hdrs[i].Len) != len(bufs[got]) || space[i*16] != byte(got) {
				t.Fatalf("message %d: len %d first byte %d", got, rb.Hdrs[i].Len, space[i*16])
			}
			if rb.Hdrs[i].Hdr.Namelen != unix.SizeofSockaddrInet4 {
				t.Fatalf("namelen %d", rb.Hdrs[i].Hdr.Namelen)
			}
			got++
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Sendmmsg(tx, sb, n, 0); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < n; {
			rb.PrepareRecv(n)
			r, err := Recvmmsg(rx, rb, n, unix.MSG_WAITFORONE)
			if err != nil {
				t.Fatal(err)
			}
			k += r
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
}

func TestErrnoNotAllocated(t *testing.T) {
	b := NewBatch(1, false, 0)
	b.Set(0, []byte{1})
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Sendmmsg(-1, b, 1, 0); err != unix.EBADF {
			t.Fatalf("got %v", err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per failed call", allocs)
	}
}

// TestProbes sends with SendtoNow, to the connected peer (an empty name,
// which must reach the kernel as NULL) and to an explicit address, and
// receives with RecvfromNow, with and without the source address, and
// probes an empty socket (EAGAIN, -1).
func TestProbes(t *testing.T) {
	rx, addr := udpSocket(t)
	tx, _ := udpSocket(t)
	if err := unix.Connect(tx, addr); err != nil {
		t.Fatal(err)
	}
	var name [SockaddrMax]byte
	nl := PutSockaddr(name[:], unix.AF_INET, netip.AddrPortFrom(netip.AddrFrom4(addr.Addr), uint16(addr.Port)))
	for i, to := range []struct {
		name *byte
		n    int
	}{{nil, 0}, {&name[0], nl}, {nil, 0}} {
		if e := SendtoNow(tx, []byte{byte(i), 2, 3}, to.name, to.n); e != 0 {
			t.Fatalf("sendto %d (name of %d bytes): %v", i, to.n, e)
		}
	}
	// A name pointer with length 0 is no address to the kernel, but an
	// invalid one.
	if e := SendtoNow(tx, []byte{9}, &name[0], 0); e != unix.EINVAL {
		t.Fatalf("sendto with a name of 0 bytes: %v, want EINVAL", e)
	}
	buf := make([]byte, 2)
	var from unix.RawSockaddrInet6
	for i := range 3 {
		var n int
		var e unix.Errno
		if i == 1 {
			fl := uint32(unix.SizeofSockaddrInet6)
			n, e = RecvfromNow(rx, buf, &from, &fl)
			if e == 0 && fl != unix.SizeofSockaddrInet4 {
				t.Errorf("recvfrom %d: source length %d", i, fl)
			}
		} else {
			n, e = RecvfromNow(rx, buf, nil, nil)
		}
		// MSG_TRUNC: the datagram's length, beyond the 2-byte buffer.
		if n != 3 || e != 0 || buf[0] != byte(i) {
			t.Fatalf("recvfrom %d: %d, %v, first byte %d", i, n, e, buf[0])
		}
	}
	if n, e := RecvfromNow(rx, buf, nil, nil); n != -1 || e != unix.EAGAIN {
		t.Fatalf("empty socket: %d, %v, want -1, EAGAIN", n, e)
	}
}
