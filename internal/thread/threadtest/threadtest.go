//go:build linux

// Package threadtest checks, for the tests of packages that run loops on
// threads with private descriptor tables, that such a thread has let go of
// the process's sockets by the time its runner returns.
package threadtest

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Releases runs rounds times: bind a UDP socket to a port of 127.0.0.1,
// call run (which runs something on a thread with a private table and
// returns once it is done), close the socket, and bind the port again. The
// bind fails, and the test with it, when the thread's copy of the socket
// still held the port after run returned.
func Releases(t testing.TB, rounds int, run func()) {
	t.Helper()
	for i := range rounds {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(s, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			unix.Close(s)
			t.Fatal(err)
		}
		sa, err := unix.Getsockname(s)
		if err != nil {
			unix.Close(s)
			t.Fatal(err)
		}
		run()
		unix.Close(s)
		s2, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.Bind(s2, sa)
		unix.Close(s2)
		if err != nil {
			t.Fatalf("round %d: port %d still bound after the run returned and the socket was closed: %v",
				i, sa.(*unix.SockaddrInet4).Port, err)
		}
	}
}
