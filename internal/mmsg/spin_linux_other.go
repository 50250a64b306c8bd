//go:build linux && !amd64

package mmsg

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvfromSpin is RecvfromSpin for tries >= 1, a Go loop over Raw6. Each
// call converts the pointers to uintptr in Raw6's own argument list (an
// assembly function): converted before a Go function's call, they would
// not keep a caller's stack variables in place if the stack moved at that
// function's entry, and the kernel would write into the old stack.
func recvfromSpin(fd int, p []byte, name *unix.RawSockaddrInet6, namelen *uint32, tries int) (int, unix.Errno, int) {
	for calls := 1; ; calls++ {
		r, _, e := Raw6(unix.SYS_RECVFROM, uintptr(fd),
			uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_DONTWAIT|unix.MSG_TRUNC,
			uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(namelen)))
		if e == 0 || calls >= tries || e != unix.EAGAIN && e != unix.EINTR {
			return int(r), e, calls
		}
	}
}
