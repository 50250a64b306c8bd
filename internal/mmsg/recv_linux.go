//go:build linux

package mmsg

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// RecvmmsgNow is Recvmmsg for a call that cannot block (flags holding
// MSG_DONTWAIT, or a non-blocking socket): it enters the kernel without
// telling the Go scheduler (RawSyscall6), which saves the scheduler's
// bookkeeping on every call of a busy-polling receive loop. A call that may
// sleep must use Recvmmsg. The error is a unix.Errno and is not allocated.
func RecvmmsgNow(fd int, b *Batch, n, flags int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.Hdrs[0])), uintptr(n), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Recvmsg receives one message into h on fd (recvmsg(2)) and returns its
// length in bytes; h's Namelen, Controllen and Flags are updated as for
// Recvmmsg. It may sleep (a blocking socket without MSG_DONTWAIT), so it
// tells the Go scheduler. The error is a unix.Errno and is not allocated.
func Recvmsg(fd int, h *unix.Msghdr, flags int) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// RecvmsgNow is Recvmsg for a call that cannot block (MSG_DONTWAIT or a
// non-blocking socket), entering the kernel with RawSyscall as RecvmmsgNow
// does. recvmsg costs the kernel less than a recvmmsg of one message, and a
// recvmmsg of several that finds one datagram pays for a second attempt
// that fails: a busy-polling receive loop probes with RecvmsgNow.
func RecvmsgNow(fd int, h *unix.Msghdr, flags int) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
