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

// RecvfromNow receives one datagram into p on fd (recvfrom(2)) without
// sleeping (flags must hold MSG_DONTWAIT; add MSG_TRUNC to learn the length
// of a datagram longer than p) through RawSyscall6, storing the source in
// name and its length in *namelen, which must hold the size of name on
// entry; name and namelen may both be nil, for no address. It returns the
// datagram's length. It is the cheapest receive the
// kernel offers (no msghdr, no iovec array, no control messages), for a
// busy-polling probe. The error is a unix.Errno and is not allocated.
func RecvfromNow(fd int, p []byte, flags int, name *unix.RawSockaddrInet6, namelen *uint32) (int, error) {
	var bp unsafe.Pointer
	if len(p) > 0 {
		bp = unsafe.Pointer(&p[0])
	}
	r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(bp), uintptr(len(p)), uintptr(flags), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(namelen)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Meminfo reads the socket's memory counters (getsockopt SO_MEMINFO, the
// SK_MEMINFO_* values of sock_diag) into mi, among them
// mi[unix.SK_MEMINFO_DROPS], the datagrams the socket dropped (sk_drops,
// the count SO_RXQ_OVFL reports). Unlike x/sys's getsockopt helpers it
// allocates nothing. The error is a unix.Errno.
func Meminfo(fd int, mi *[unix.SK_MEMINFO_VARS]uint32) error {
	n := uint32(unsafe.Sizeof(*mi))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO, uintptr(unsafe.Pointer(mi)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return e
	}
	return nil
}
