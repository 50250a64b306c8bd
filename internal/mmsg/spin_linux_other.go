//go:build linux && !amd64

package mmsg

import "golang.org/x/sys/unix"

// spin6 makes system call trap with Raw6, again at once while it fails
// with EAGAIN or EINTR, at most tries times (tries >= 1), and returns the
// last call's result (r1, -1 for an error), how many calls it made and
// the errno (see RecvfromSpin; on amd64 it is one assembly loop).
func spin6(trap, a1, a2, a3, a4, a5, a6, tries uintptr) (r1, calls uintptr, errno unix.Errno) {
	for {
		calls++
		r1, _, errno = Raw6(trap, a1, a2, a3, a4, a5, a6)
		if errno == 0 || calls >= tries || errno != unix.EAGAIN && errno != unix.EINTR {
			return r1, calls, errno
		}
	}
}
