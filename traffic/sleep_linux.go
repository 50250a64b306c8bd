package traffic

import (
	"time"

	"golang.org/x/sys/unix"
)

// sleep blocks the calling thread for d. Below a millisecond it calls
// nanosleep(2) directly: the Go runtime's timers sleep in epoll_pwait,
// whose timeout is whole milliseconds, so time.Sleep(20µs) takes a
// millisecond when the process is otherwise idle, which would cap a paced
// generator far below its rate. nanosleep wakes after d plus the thread's
// timer slack (50 µs by default, prctl(2) PR_SET_TIMERSLACK).
func sleep(d time.Duration) {
	if d >= time.Millisecond {
		time.Sleep(d)
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
