//go:build linux && amd64

package mmsg

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvfromSpin is RecvfromSpin for tries >= 1: one call of the assembly
// loop spin6. The pointers become uintptr in the call's argument list,
// so that the memory they point to stays alive and in place until the
// assembly function returns (as for Raw6).
func recvfromSpin(fd int, p []byte, name *unix.RawSockaddrInet6, namelen *uint32, tries int) (int, unix.Errno, int) {
	r, c, e := spin6(unix.SYS_RECVFROM, uintptr(fd),
		uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_DONTWAIT|unix.MSG_TRUNC,
		uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(namelen)), uintptr(tries))
	return int(r), e, int(c)
}

// spin6 makes system call trap, again at once while it fails with EAGAIN
// or EINTR, at most tries times (tries >= 1), and returns the last call's
// result (r1, -1 for an error), how many calls it made and the errno (see
// RecvfromSpin). Implemented in spin_linux_amd64.s; pointer arguments
// follow the rule for system calls, as Raw6's do.
//
//go:noescape
func spin6(trap, a1, a2, a3, a4, a5, a6, tries uintptr) (r1, calls uintptr, errno unix.Errno)
