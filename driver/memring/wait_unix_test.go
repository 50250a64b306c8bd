//go:build unix

package memring_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
)

// cpuTime returns the CPU time the process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestWaitSleeps checks that Wait blocks without spinning: a 200 ms Wait on
// an idle device uses a small fraction of a CPU.
func TestWaitSleeps(t *testing.T) {
	_, b, _ := newPair(t, memring.Config{})
	const wait = 200 * time.Millisecond
	before := cpuTime(t)
	err := b.Wait(wait)
	used := cpuTime(t) - before
	if !errors.Is(err, netdev.ErrTimeout) {
		t.Fatalf("Wait(%v) on an idle device: %v", wait, err)
	}
	if used > wait/4 {
		t.Errorf("Wait(%v) used %v of CPU; it must sleep, not spin", wait, used)
	}
}
