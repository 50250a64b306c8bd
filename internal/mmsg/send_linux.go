//go:build linux

package mmsg

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// SendHdrs sends the messages in hdrs on fd with one sendmmsg(2) and returns
// how many the kernel took; a short count is not an error. It is Sendmmsg for
// callers that lay out their own headers: a message may gather any number of
// iovecs (SetIov), as a UDP GSO message whose datagrams are separate buffers
// does. The error is a unix.Errno and is not allocated.
func SendHdrs(fd int, hdrs []unix.Mmsghdr, flags int) (int, error) {
	if len(hdrs) == 0 {
		return 0, nil
	}
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Sendmsg sends the one message h on fd (sendmsg(2)) and returns the bytes
// sent. The error is a unix.Errno and is not allocated.
func Sendmsg(fd int, h *unix.Msghdr, flags int) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Sendto sends p as one datagram on fd (sendto(2)) to the socket address held
// in name (a struct sockaddr_in or sockaddr_in6 as bytes, see PutSockaddr), or
// to the connected peer when name is empty. It returns the bytes sent; unlike
// unix.Sendto it allocates nothing. The error is a unix.Errno.
func Sendto(fd int, p []byte, flags int, name []byte) (int, error) {
	var bp, np unsafe.Pointer
	if len(p) > 0 {
		bp = unsafe.Pointer(&p[0])
	}
	if len(name) > 0 {
		np = unsafe.Pointer(&name[0])
	}
	r, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(bp), uintptr(len(p)), uintptr(flags), uintptr(np), uintptr(len(name)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// SetIov points h at the iovecs in iov (msg_iov, msg_iovlen); an empty iov
// means no data (a zero-length datagram).
func SetIov(h *unix.Msghdr, iov []unix.Iovec) {
	if len(iov) == 0 {
		h.Iov = nil
		h.SetIovlen(0)
		return
	}
	h.Iov = &iov[0]
	h.SetIovlen(len(iov))
}

// SetName points h at the socket address in name (msg_name, msg_namelen), as
// PutSockaddr writes it; an empty name means none (a connected socket).
func SetName(h *unix.Msghdr, name []byte) {
	if len(name) == 0 {
		h.Name, h.Namelen = nil, 0
		return
	}
	h.Name = &name[0]
	h.Namelen = uint32(len(name))
}

// SetCtrl points h at the control messages in ctrl (msg_control,
// msg_controllen); an empty ctrl means none.
func SetCtrl(h *unix.Msghdr, ctrl []byte) {
	if len(ctrl) == 0 {
		h.Control = nil
		h.SetControllen(0)
		return
	}
	h.Control = &ctrl[0]
	h.SetControllen(len(ctrl))
}

// Bind binds fd to the socket address in sa (bind(2)), a struct sockaddr as
// bytes (PutSockaddr). The error is a unix.Errno.
func Bind(fd int, sa []byte) error { return sockaddrCall(unix.SYS_BIND, fd, sa) }

// Connect connects fd to the socket address in sa (connect(2)), a struct
// sockaddr as bytes (PutSockaddr). The error is a unix.Errno.
func Connect(fd int, sa []byte) error { return sockaddrCall(unix.SYS_CONNECT, fd, sa) }

func sockaddrCall(trap uintptr, fd int, sa []byte) error {
	if len(sa) == 0 {
		return unix.EINVAL
	}
	_, _, e := unix.Syscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa)))
	if e != 0 {
		return e
	}
	return nil
}

// SendHdrsNow is SendHdrs for a call that cannot sleep (flags holding
// MSG_DONTWAIT): it enters the kernel with Raw6, without telling the
// Go scheduler, so that a send that runs long in the kernel (on loopback the
// receive path runs inside the sender's call, tens of microseconds for a
// batch) does not make the scheduler hand the goroutine's P away. A send
// that may sleep must use SendHdrs.
func SendHdrsNow(fd int, hdrs []unix.Mmsghdr, flags int) (int, error) {
	if len(hdrs) == 0 {
		return 0, nil
	}
	r, _, e := Raw6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// SendtoNow sends p as one datagram on fd (sendto(2) with MSG_DONTWAIT: it
// never sleeps) to the struct sockaddr of namelen bytes at name, or, with
// name nil and namelen 0, to the connected peer (the kernel refuses a
// pointer with length 0, EINVAL). It enters the kernel through Raw6 for the
// reason RecvfromNow gives, and is small enough to be inlined into its
// caller (the flags are fixed, and the byte count, all of p for a datagram
// sent, not returned, for that). It returns 0 or the errno.
func SendtoNow(fd int, p []byte, name *byte, namelen int) unix.Errno {
	_, _, e := Raw6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_DONTWAIT,
		uintptr(unsafe.Pointer(name)), uintptr(namelen))
	return e
}

// SendmsgNow is Sendmsg for a call that cannot sleep (flags holding
// MSG_DONTWAIT), entering the kernel with Raw6 as SendHdrsNow does: one
// message without the struct mmsghdr a sendmmsg(2) of one copies in and
// out (no gain measured beyond noise). It returns the bytes sent, or the
// errno.
func SendmsgNow(fd int, h *unix.Msghdr, flags int) (int, unix.Errno) {
	r, _, e := Raw6(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(h)), uintptr(flags), 0, 0, 0)
	return int(r), e
}
