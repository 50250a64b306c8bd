package netdevtest

import (
	"errors"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
)

// CloseDuringRunOnThread waits in d's Wait (for up to 3 s) on the thread
// netdev.RunOnThread gives, and closes d from another goroutine 50 ms in:
// Wait must return netdev.ErrClosed and Close nil. It reports whether the
// thread had a private descriptor table; the caller then checks that what
// d held in the process (a port, an AF_XDP queue) is free again, which it
// must be once RunOnThread has returned, although d released on that
// thread.
func CloseDuringRunOnThread(t testing.TB, d netdev.Device) (private bool) {
	t.Helper()
	closed := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		closed <- d.Close()
	}()
	var waitErr error
	private, err := netdev.RunOnThread(-1, func() { waitErr = d.Wait(3 * time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if !errors.Is(waitErr, netdev.ErrClosed) {
		t.Errorf("Wait: %v, want ErrClosed", waitErr)
	}
	return private
}
