//go:build linux && amd64

package mmsg

import "golang.org/x/sys/unix"

// spin6 makes system call trap, again at once while it fails with EAGAIN
// or EINTR, at most tries times (tries >= 1), and returns the last call's
// result (r1, -1 for an error), how many calls it made and the errno (see
// RecvfromSpin). Implemented in spin_linux_amd64.s; pointer arguments
// follow the rule for system calls, as Raw6's do.
//
//go:noescape
func spin6(trap, a1, a2, a3, a4, a5, a6, tries uintptr) (r1, calls uintptr, errno unix.Errno)
