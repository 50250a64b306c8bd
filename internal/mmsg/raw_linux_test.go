//go:build linux

package mmsg

import (
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRaw6 checks Raw6's results against the kernel's: a datagram's
// length, and -1 with the errno for an empty socket and a bad descriptor.
func TestRaw6(t *testing.T) {
	fd, sa := udpSocket(t)
	var buf [64]byte
	p := uintptr(unsafe.Pointer(&buf[0]))
	if r, _, e := Raw6(unix.SYS_RECVFROM, uintptr(fd), p, uintptr(len(buf)), unix.MSG_DONTWAIT, 0, 0); e != unix.EAGAIN || r != ^uintptr(0) {
		t.Fatalf("recvfrom of an empty socket: %d, %v; want -1, EAGAIN", int(r), e)
	}
	if r, _, e := Raw6(unix.SYS_RECVFROM, ^uintptr(0), p, uintptr(len(buf)), unix.MSG_DONTWAIT, 0, 0); e != unix.EBADF || r != ^uintptr(0) {
		t.Fatalf("recvfrom of fd -1: %d, %v; want -1, EBADF", int(r), e)
	}
	if err := unix.Sendto(fd, []byte("hello, Raw6"), 0, sa); err != nil {
		t.Fatal(err)
	}
	r, _, e := Raw6(unix.SYS_RECVFROM, uintptr(fd), p, uintptr(len(buf)), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 || int(r) != len("hello, Raw6") || string(buf[:r]) != "hello, Raw6" {
		t.Fatalf("recvfrom: %d, %v, %q", int(r), e, buf[:max(0, int(r))])
	}
}

// BenchmarkRawRecvfromEmpty is one probe of an empty socket, the call a
// busy-polling receive loop makes millions of times a second, through the
// syscall package (a Go function around the runtime's assembly) and
// through Raw6 (one assembly function): ns per call.
func BenchmarkRawRecvfromEmpty(b *testing.B) {
	fd, _ := udpSocket(b)
	var buf [64]byte
	p := uintptr(unsafe.Pointer(&buf[0]))
	b.Run("syscall", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range b.N {
			if _, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), p, uintptr(len(buf)), unix.MSG_DONTWAIT, 0, 0); e != unix.EAGAIN {
				b.Fatal(e)
			}
		}
	})
	b.Run("Raw6", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range b.N {
			if _, _, e := Raw6(unix.SYS_RECVFROM, uintptr(fd), p, uintptr(len(buf)), unix.MSG_DONTWAIT, 0, 0); e != unix.EAGAIN {
				b.Fatal(e)
			}
		}
	})
}
