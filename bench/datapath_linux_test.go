package bench

import (
	"testing"

	"github.com/skbdev/skb/internal/thread/threadtest"
)

// TestDatapathReleases closes, as soon as datapath's channel has given fn's
// CPU time, a socket opened before, and binds its port again: fn's thread,
// and the copy of the socket in its private table, must be gone by then, or
// a device the bench closes after a run (an AF_XDP socket, whose queue takes
// one socket) is still held when the next run opens it again.
func TestDatapathReleases(t *testing.T) {
	threadtest.Releases(t, 100, func() { <-datapath(NoPin, func() {}) })
}
