package thread

import (
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkRecvfromEmpty measures an empty non-blocking recvfrom(2) on a
// UDP socket (EAGAIN), the call a busy-polling receiver makes over and
// over, from a thread sharing the process's descriptor table and from one
// with a private table (Dedicate): the difference is the file reference
// the kernel takes and drops around the call on a shared table.
func BenchmarkRecvfromEmpty(b *testing.B) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		b.Fatal(err)
	}
	for _, private := range []bool{false, true} {
		name := "shared"
		if private {
			name = "private"
		}
		b.Run(name, func(b *testing.B) {
			var buf [64]byte
			var ok bool
			var dErr error
			var bad syscall.Errno
			onLocked(func() {
				if private {
					if ok, dErr = Dedicate(-1); dErr != nil || !ok {
						return
					}
				}
				b.ResetTimer()
				for range b.N {
					_, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
						unix.MSG_DONTWAIT, 0, 0)
					if e != unix.EAGAIN {
						bad = e
						return
					}
				}
			})
			switch {
			case private && (dErr != nil || !ok):
				b.Skipf("no private table here: %v", dErr)
			case bad != 0:
				b.Fatalf("recvfrom: %v, want EAGAIN", bad)
			}
		})
	}
}
