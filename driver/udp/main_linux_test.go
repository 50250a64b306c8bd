//go:build linux

package udp

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/skbdev/skb/pool"
)

// TestMain fails the package when the tests leave buffers in flight, file
// descriptors open or goroutines running.
func TestMain(m *testing.M) {
	// The runtime's netpoller (an epoll and an eventfd) opens at the first
	// net socket and stays: open it before counting.
	if c, err := net.ListenPacket("udp", "127.0.0.1:0"); err == nil {
		c.Close()
	}
	fds := countFDs()
	gs := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if err := pool.CheckLeaks(); err != nil {
			fmt.Fprintf(os.Stderr, "buffers leaked after the tests passed:\n%v\n", err)
			code = 1
		}
		if n := countFDs(); n > fds {
			fmt.Fprintf(os.Stderr, "%d file descriptors leaked after the tests passed\n", n-fds)
			code = 1
		}
		// Goroutines of finished tests may take a moment to exit.
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > gs && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > gs {
			buf := make([]byte, 1<<16)
			fmt.Fprintf(os.Stderr, "%d goroutines leaked after the tests passed:\n%s\n", n-gs, buf[:runtime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}
