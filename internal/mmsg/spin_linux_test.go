//go:build linux

package mmsg

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRecvfromSpin checks the spin's results against the kernel's: every
// try made on an empty socket, one call for a bad descriptor and for a
// datagram already queued (its length, bytes, truncation and source), and
// a datagram sent while the spin runs taken before the tries run out.
func TestRecvfromSpin(t *testing.T) {
	fd, sa := udpSocket(t)
	buf := make([]byte, 16)
	for _, tries := range []int{-1, 0, 1, 5, 64} {
		n, e, calls := RecvfromSpin(fd, buf, nil, nil, tries)
		if n != -1 || e != unix.EAGAIN || calls != max(tries, 1) {
			t.Errorf("RecvfromSpin of an empty socket, %d tries: %d, %v, %d calls; want -1, EAGAIN, %d calls", tries, n, e, calls, max(tries, 1))
		}
	}
	if n, e, calls := RecvfromSpin(-1, buf, nil, nil, 8); n != -1 || e != unix.EBADF || calls != 1 {
		t.Errorf("RecvfromSpin of fd -1: %d, %v, %d calls; want -1, EBADF, 1 call", n, e, calls)
	}

	src, srcAddr := udpSocket(t)
	msg := []byte("a datagram longer than sixteen bytes")
	if err := unix.Sendto(src, msg, 0, sa); err != nil {
		t.Fatal(err)
	}
	var name unix.RawSockaddrInet6
	namelen := uint32(unsafe.Sizeof(name))
	n, e, calls := RecvfromSpin(fd, buf, &name, &namelen, 8)
	if e != 0 || n != len(msg) || calls != 1 || !bytes.Equal(buf, msg[:len(buf)]) {
		t.Fatalf("RecvfromSpin of a queued %d-byte datagram into 16 bytes: %d, %v, %d calls, %q; want %d (MSG_TRUNC), 0, 1 call, %q",
			len(msg), n, e, calls, buf, len(msg), msg[:len(buf)])
	}
	in4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(&name))
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&in4.Port))[:])
	if namelen != unix.SizeofSockaddrInet4 || in4.Family != unix.AF_INET || in4.Addr != srcAddr.Addr || int(port) != srcAddr.Port {
		t.Errorf("RecvfromSpin's source: family %d %v port %d, namelen %d; want %v port %d, namelen %d",
			in4.Family, in4.Addr, port, namelen, srcAddr.Addr, srcAddr.Port, unix.SizeofSockaddrInet4)
	}
}

// TestRecvfromSpinWaits sends a datagram 20 ms into a spin: the spin keeps
// trying until it comes, and stops there. The sender needs a P of its own
// while the spin holds one (the assembly loop has no preemption point).
func TestRecvfromSpinWaits(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2: the sender runs beside a spin that keeps its P")
	}
	fd, sa := udpSocket(t)
	src, _ := udpSocket(t)
	buf := make([]byte, 16)
	sent := make(chan error, 1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		sent <- unix.Sendto(src, []byte("late"), 0, sa)
	}()
	const tries = 1 << 22 // seconds at the slowest system calls seen
	n, e, calls := RecvfromSpin(fd, buf, nil, nil, tries)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if e != 0 || n != 4 || string(buf[:4]) != "late" || calls < 2 || calls >= tries {
		t.Errorf("RecvfromSpin while a datagram comes 20 ms later: %d, %v, %d calls, %q; want 4, 0, between 2 and %d calls, \"late\"", n, e, calls, buf[:max(n, 0)], tries)
	}
}

// BenchmarkRecvfromSpin is ns per probe of an empty socket: RecvfromNow
// called from a Go loop, one probe a call, against RecvfromSpin in rounds
// of 32. On this host (2026-12-02) the two were within each other's
// noise, 1200-1450 ns, either ahead by turns: the system call is nearly
// all of a probe. What the spin saves is on the ping-pong's path, where a
// datagram found goes back to Go once (see RecvfromSpin).
func BenchmarkRecvfromSpin(b *testing.B) {
	fd, _ := udpSocket(b)
	buf := make([]byte, 2048)
	b.Run("RecvfromNow", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range b.N {
			if _, e := RecvfromNow(fd, buf, nil, nil); e != unix.EAGAIN {
				b.Fatal(e)
			}
		}
	})
	b.Run("RecvfromSpin32", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := 0; i < b.N; i += 32 {
			if _, e, calls := RecvfromSpin(fd, buf, nil, nil, min(32, b.N-i)); e != unix.EAGAIN || calls != min(32, b.N-i) {
				b.Fatal(e, calls)
			}
		}
	})
}

// spinDeep calls RecvfromSpin depth frames down, into buffers on its own
// stack, and reports whether they got want (its length, its bytes, an
// IPv4 source): a stack that grows during the call, and moves, must not
// leave the kernel writing where the variables were.
//
//go:noinline
func spinDeep(depth, fd int, want string) bool {
	if depth > 0 {
		var pad [48]byte
		pad[depth%48] = byte(depth)
		return spinDeep(depth-1, fd, want) && pad[depth%48] == byte(depth)
	}
	var buf [16]byte
	var name unix.RawSockaddrInet6
	namelen := uint32(unsafe.Sizeof(name))
	n, e, _ := RecvfromSpin(fd, buf[:], &name, &namelen, 8)
	return e == 0 && n == len(want) && string(buf[:n]) == want && namelen == unix.SizeofSockaddrInet4 && name.Family == unix.AF_INET
}

// TestRecvfromSpinStackMove receives into a caller's stack variables from
// fresh goroutines at 400 depths, so that some calls land where the
// goroutine's small stack must grow: every datagram must arrive in the
// variables (the Go loop of other architectures once converted the
// pointers before a Go call, and lost the datagram when the stack moved).
func TestRecvfromSpinStackMove(t *testing.T) {
	fd, sa := udpSocket(t)
	src, _ := udpSocket(t)
	const msg = "sixteen bytes!!!"
	bad := 0
	for depth := range 400 {
		if err := unix.Sendto(src, []byte(msg), 0, sa); err != nil {
			t.Fatal(err)
		}
		ok := make(chan bool)
		go func() { ok <- spinDeep(depth, fd, msg) }()
		if !<-ok {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of 400 depths: the datagram did not reach the caller's stack variables", bad)
	}
}
