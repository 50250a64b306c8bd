package bench

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestDatapathReleases closes, as soon as datapath's channel has given fn's
// CPU time, a socket opened before, and binds its port again: fn's thread,
// and the copy of the socket in its private table, must be gone by then, or
// a device the bench closes after a run (an AF_XDP socket, whose queue takes
// one socket) is still held when the next run opens it again.
func TestDatapathReleases(t *testing.T) {
	for i := range 100 {
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
		<-datapath(NoPin, func() {})
		unix.Close(s)
		s2, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.Bind(s2, sa)
		unix.Close(s2)
		if err != nil {
			t.Fatalf("run %d: port %d still bound after datapath's run ended and the socket was closed: %v",
				i, sa.(*unix.SockaddrInet4).Port, err)
		}
	}
}
