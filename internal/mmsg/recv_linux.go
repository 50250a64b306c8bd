//go:build linux

package mmsg

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RecvmmsgNow is Recvmmsg for a call that cannot block (flags holding
// MSG_DONTWAIT, or a non-blocking socket): it enters the kernel without
// telling the Go scheduler (Raw6), which saves the scheduler's
// bookkeeping on every call of a busy-polling receive loop. A call that may
// sleep must use Recvmmsg. The error is a unix.Errno and is not allocated.
func RecvmmsgNow(fd int, b *Batch, n, flags int) (int, error) {
	r, _, e := Raw6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.Hdrs[0])), uintptr(n), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// RecvmmsgHeld is Recvmmsg for a call that may sleep but must keep the
// caller's P (the Go scheduler's slot for running Go code): it enters the
// kernel with Raw6, without telling the scheduler, so the scheduler's
// monitor sees a goroutine still running, does not hand the P to another
// thread after 20 µs, and has nothing to wake on the way back. While it
// sleeps no other goroutine runs on that P: the runtime takes it back only
// by preempting, with a signal (SIGURG; once a goroutine has run for 10-20
// ms, and at once to stop the world for the garbage collector).
//
// The caller must make that signal end the call: the socket must have a
// finite receive timeout (SO_RCVTIMEO), without which the kernel restarts
// an interrupted receive (signal(7); the runtime installs its handlers
// with SA_RESTART) and a stop of the world waits for a datagram. The
// timeout should be short too, for a program that has the signal off
// (GODEBUG=asyncpreemptoff=1, or SIGURG ignored): nothing else ends the
// call. On EINTR or EAGAIN the caller must reach a preemption point
// (runtime.Gosched) before it calls again. The error is a unix.Errno and
// is not allocated.
func RecvmmsgHeld(fd int, b *Batch, n, flags int) (int, error) {
	return RecvmmsgNow(fd, b, n, flags)
}

// Recvmsg receives one message into h on fd (recvmsg(2)) and returns its
// length in bytes; h's Namelen, Controllen and Flags are updated as for
// Recvmmsg. It may sleep (a blocking socket without MSG_DONTWAIT), so it
// tells the Go scheduler. It returns the errno, 0 on success, not an
// error: a receive loop compares it with EAGAIN as an integer, where an
// error interface would cost a conversion and an interface comparison on
// every empty probe.
func Recvmsg(fd int, h *unix.Msghdr, flags int) (int, unix.Errno) {
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// RecvmsgNow is Recvmsg for a call that cannot block (MSG_DONTWAIT or a
// non-blocking socket), entering the kernel with Raw6 as RecvmmsgNow
// does. recvmsg costs the kernel less than a recvmmsg of one message, and a
// recvmmsg of several that finds one datagram pays for a second attempt
// that fails: a busy-polling receive loop probes with RecvmsgNow. It
// returns the errno, 0 on success.
func RecvmsgNow(fd int, h *unix.Msghdr, flags int) (int, unix.Errno) {
	r, _, e := Raw6(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), uintptr(flags), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// RecvfromNow receives one datagram into p on fd (recvfrom(2) with
// MSG_DONTWAIT|MSG_TRUNC: it never sleeps, and a datagram longer than p
// comes back truncated with its full length), storing the source in name
// and its length in *namelen, which must hold the size of name on entry;
// name and namelen may both be nil, for no address. It returns the
// datagram's length and errno 0, or -1 and the errno. It is the cheapest
// receive the kernel offers (no msghdr, no iovec array, no control
// messages), for a busy-polling probe.
//
// It enters the kernel through Raw6, one assembly function: each stack
// frame between the caller and the system call costs a mispredicted
// return on the way out on this kind of machine (see Raw6). Measured on an
// empty non-blocking recvfrom: 328 ns through the syscall package's
// RawSyscall6, 338 ns through x/sys's (a jump to it through an ABI
// wrapper), 355 ns with one more function around it; Raw6 saves another
// about 15 ns against the syscall package. A busy poll pays that on every
// probe, so callers make this call from the function that polls, with
// nothing in between, and it is small enough to be inlined there (the
// flags are fixed for that: one argument fewer).
func RecvfromNow(fd int, p []byte, name *unix.RawSockaddrInet6, namelen *uint32) (n int, errno unix.Errno) {
	r, _, errno := Raw6(unix.SYS_RECVFROM, uintptr(fd),
		uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_DONTWAIT|unix.MSG_TRUNC,
		uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(namelen)))
	return int(r), errno
}

// RecvfromWait is RecvfromNow for a call that sleeps until a datagram
// comes (recvfrom(2) with MSG_TRUNC alone), bounded by the socket's
// SO_RCVTIMEO (EAGAIN when it passes). It tells the Go scheduler, as
// unix.Syscall6 does, so the goroutine's P serves others while it sleeps.
// One datagram per call costs the kernel less than a recvmmsg(2) that
// sleeps for the first and then tries for a second that is not there
// (MSG_WAITFORONE), which is what a receiver woken for every datagram
// pays. p, name and namelen are the caller's and are not kept after the
// call. It returns the datagram's length and errno 0, or -1 and the errno
// (EINTR when a signal ended the sleep).
func RecvfromWait(fd int, p []byte, name *unix.RawSockaddrInet6, namelen *uint32) (n int, errno unix.Errno) {
	r, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd),
		uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_TRUNC,
		uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(namelen)))
	return int(r), errno
}

// RecvfromHeld is RecvfromWait for a caller that must keep its P while it
// sleeps: it enters the kernel through Raw6, and the caller must follow
// the rules RecvmmsgHeld gives (a finite SO_RCVTIMEO on the socket, so the
// runtime's preemption signal ends the call with EINTR; a preemption point
// before the next call).
func RecvfromHeld(fd int, p []byte, name *unix.RawSockaddrInet6, namelen *uint32) (n int, errno unix.Errno) {
	r, _, errno := Raw6(unix.SYS_RECVFROM, uintptr(fd),
		uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_TRUNC,
		uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(namelen)))
	return int(r), errno
}

// PollIn sleeps in ppoll(2) until fd is readable (POLLIN, or POLLERR or
// POLLHUP, which a receive then reports) or timeout passes, and reports
// whether it is. The kernel keeps the timeout with a high-resolution timer,
// to within the thread's timer slack (50 µs by default, prctl(2)
// PR_SET_TIMERSLACK), where a socket's SO_RCVTIMEO counts in scheduler
// ticks (jiffies) and ends one or two ticks late. It tells the Go
// scheduler, as unix.Syscall6 does. It returns errno 0 on success, or the
// errno: EINTR when a signal ended the sleep (ppoll is never restarted
// after a signal handler ran, signal(7)), EINVAL for a negative timeout.
func PollIn(fd int, timeout time.Duration) (bool, unix.Errno) {
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	ts := unix.NsecToTimespec(int64(timeout))
	r, _, errno := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return errno == 0 && r > 0, errno
}

// PollInHeld is PollIn for a caller that must keep its P while it sleeps
// (see RecvmmsgHeld): it enters the kernel through Raw6. The runtime's
// preemption signal ends the call with EINTR (ppoll is not restarted, so
// the socket needs no receive timeout); the caller must reach a preemption
// point before it calls again, and should keep timeout short for a program
// that has the signal off, where nothing else ends the call.
func PollInHeld(fd int, timeout time.Duration) (bool, unix.Errno) {
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	ts := unix.NsecToTimespec(int64(timeout))
	r, _, errno := Raw6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return errno == 0 && r > 0, errno
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
