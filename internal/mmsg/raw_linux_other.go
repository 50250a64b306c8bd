//go:build linux && !amd64

package mmsg

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Raw6 makes system call trap with six arguments without telling the Go
// scheduler (syscall.RawSyscall6), for calls that cannot sleep, and
// returns the call's result and errno 0, or -1 (all bits set) and the
// errno. On amd64 it is one assembly function, a stack frame fewer
// (raw_linux_amd64.go).
//
// It does not grow the stack (nosplit), so that a pointer to its caller's
// stack passed as a uintptr stays valid during the call; the caller keeps
// the memory alive.
//
//go:nosplit
func Raw6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r uintptr, errno unix.Errno) {
	r, _, errno = syscall.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	if errno != 0 {
		r = ^uintptr(0)
	}
	return r, errno
}
