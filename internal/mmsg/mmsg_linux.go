//go:build linux

package mmsg

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Batch holds the headers of up to Cap messages for one sendmmsg or recvmmsg
// call: message i has one iovec (Iov[i]), an optional address (Names[i], a
// sockaddr_in6, large enough for IPv4 too) and an optional control buffer of
// CtrlLen bytes. All of it is allocated once, by NewBatch; the memory the
// iovecs point at belongs to the caller (usually skb buffers in an off-heap
// arena) and must stay valid until the call returns.
type Batch struct {
	Hdrs    []unix.Mmsghdr
	Iov     []unix.Iovec
	Names   []unix.RawSockaddrInet6
	ctrl    []byte
	CtrlLen int
}

// NewBatch allocates a batch of n messages, each with one iovec, an address
// slot when names is true, and ctrlLen bytes of control buffer (0 for none).
func NewBatch(n int, names bool, ctrlLen int) *Batch {
	b := &Batch{
		Hdrs:    make([]unix.Mmsghdr, n),
		Iov:     make([]unix.Iovec, n),
		CtrlLen: ctrlLen,
	}
	if names {
		b.Names = make([]unix.RawSockaddrInet6, n)
	}
	if ctrlLen > 0 {
		b.ctrl = make([]byte, n*ctrlLen)
	}
	for i := range b.Hdrs {
		h := &b.Hdrs[i].Hdr
		h.Iov = &b.Iov[i]
		h.SetIovlen(1)
	}
	return b
}

// Cap returns the number of messages the batch holds.
func (b *Batch) Cap() int { return len(b.Hdrs) }

// Set points message i's iovec at buf. buf must not be empty.
func (b *Batch) Set(i int, buf []byte) {
	b.Iov[i].Base = &buf[0]
	b.Iov[i].SetLen(len(buf))
}

// SetName makes message i carry address slot i, filled by the caller with n
// bytes (unix.SizeofSockaddrInet4 or unix.SizeofSockaddrInet6); n 0 means no
// address (a connected socket).
func (b *Batch) SetName(i int, n int) {
	h := &b.Hdrs[i].Hdr
	if n == 0 {
		h.Name, h.Namelen = nil, 0
		return
	}
	h.Name = (*byte)(unsafe.Pointer(&b.Names[i]))
	h.Namelen = uint32(n)
}

// Ctrl returns message i's control buffer (CtrlLen bytes), or nil.
func (b *Batch) Ctrl(i int) []byte {
	if b.CtrlLen == 0 {
		return nil
	}
	return b.ctrl[i*b.CtrlLen : (i+1)*b.CtrlLen : (i+1)*b.CtrlLen]
}

// UseCtrl makes message i carry the first n bytes of its control buffer (for
// sending a cmsg such as UDP_SEGMENT), or, with n = CtrlLen, offer all of it
// to the kernel (for receiving); n 0 means no control data.
func (b *Batch) UseCtrl(i, n int) {
	h := &b.Hdrs[i].Hdr
	if n == 0 {
		h.Control = nil
		h.SetControllen(0)
		return
	}
	h.Control = &b.ctrl[i*b.CtrlLen]
	h.SetControllen(n)
}

// PrepareRecv resets the in/out fields of messages [0, n) before a recvmmsg:
// the address and control lengths the kernel overwrites, and the flags.
func (b *Batch) PrepareRecv(n int) {
	for i := range n {
		h := &b.Hdrs[i].Hdr
		if b.Names != nil {
			h.Name = (*byte)(unsafe.Pointer(&b.Names[i]))
			h.Namelen = unix.SizeofSockaddrInet6
		}
		if b.CtrlLen > 0 {
			h.Control = &b.ctrl[i*b.CtrlLen]
			h.SetControllen(b.CtrlLen)
		}
		h.Flags = 0
		b.Hdrs[i].Len = 0
	}
}

// Sendmmsg sends messages [0, n) of b on fd (sendmmsg(2)) and returns how
// many the kernel took; a short count is not an error. The error is a
// unix.Errno (EAGAIN, EINTR, EMSGSIZE, EIO ...) and is not allocated.
func Sendmmsg(fd int, b *Batch, n, flags int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.Hdrs[0])), uintptr(n), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// SendmmsgFrom is Sendmmsg of messages [from, from+n), for retrying the tail
// of a batch after a short send.
func SendmmsgFrom(fd int, b *Batch, from, n, flags int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.Hdrs[from])), uintptr(n), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Recvmmsg receives up to n messages into b on fd (recvmmsg(2)); call
// PrepareRecv(n) first. Message i's length is b.Hdrs[i].Len and its flags
// (MSG_TRUNC, MSG_CTRUNC) are b.Hdrs[i].Hdr.Flags. The error is a unix.Errno
// and is not allocated.
func Recvmmsg(fd int, b *Batch, n, flags int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.Hdrs[0])), uintptr(n), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
