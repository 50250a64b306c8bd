package traffic

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/skbdev/skb/internal/nap"
)

// naps counts the raw naps of the process, to yield the P every
// nap.YieldEvery of them.
var naps atomic.Uint32

// sleep blocks the calling thread for d. Up to a millisecond it naps in
// nanosleep(2) as a raw system call (package nap): the Go runtime's timers
// sleep in epoll_pwait, whose timeout is whole milliseconds, so
// time.Sleep(20µs) takes a millisecond when the process is otherwise idle,
// which would cap a paced generator far below its rate; and the
// scheduler's system-call path would hand the P off and back on every nap
// of a sleeping sink. The nap holds the P, so every nap.YieldEvery naps
// sleep yields it to other goroutines.
func sleep(d time.Duration) {
	nap.Sleep(d)
	if d > 0 && d <= nap.Max && naps.Add(1)%nap.YieldEvery == 0 {
		runtime.Gosched()
	}
}
