package udp

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/netdev"
)

// TestOpenCloseInRunOnThread opens and closes a device inside
// netdev.RunOnThread, while another goroutine opens a descriptor in the
// process's table meanwhile (which then often gets the number of the
// device's socket in fn's table): Close must close the socket in fn's
// table, where it was opened, and leave the other goroutine's descriptor
// alone.
func TestOpenCloseInRunOnThread(t *testing.T) {
	for i := range 20 {
		open, opened := make(chan struct{}), make(chan int)
		go func() { // an ordinary goroutine: the process's table
			<-open
			fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
			if err != nil {
				t.Error(err)
			}
			opened <- fd
		}()
		var openErr, closeErr, after error
		var sock, other int
		private, err := netdev.RunOnThread(-1, func() {
			d, err := Open(Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
			close(open)
			other = <-opened
			if err != nil {
				openErr = err
				return
			}
			sock = d.fd
			closeErr = d.Close()
			_, after = unix.FcntlInt(uintptr(sock), unix.F_GETFD, 0)
		})
		if err != nil || openErr != nil {
			t.Fatal(err, openErr)
		}
		_, otherErr := unix.FcntlInt(uintptr(other), unix.F_GETFD, 0)
		unix.Close(other)
		if !private {
			t.Skip("the kernel refused a private descriptor table here (seccomp?)")
		}
		if closeErr != nil {
			t.Errorf("run %d: Close of the device opened in fn (socket %d): %v", i, sock, closeErr)
		}
		if after == nil {
			t.Errorf("run %d: socket %d still open in fn's table after Close", i, sock)
		}
		if otherErr != nil {
			t.Fatalf("run %d: Close of the device opened in fn (socket %d) closed another goroutine's descriptor %d: %v",
				i, sock, other, otherErr)
		}
	}
}
