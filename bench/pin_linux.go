package bench

import (
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// pinned runs fn on a new goroutine locked to its own OS thread, pinned to
// cpu (NoPin: not pinned) with sched_setaffinity(2), and returns a channel
// that receives the CPU time (user and system) the thread spent in fn once
// fn returns. The goroutine exits still locked, so the thread, with its
// affinity, is discarded rather than reused.
func pinned(cpu int, fn func()) <-chan time.Duration {
	ch := make(chan time.Duration, 1)
	go func() {
		runtime.LockOSThread()
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			_ = unix.SchedSetaffinity(0, &set) // unpinned is still a measurement
		}
		t0 := threadCPU()
		fn()
		ch <- threadCPU() - t0
	}()
	return ch
}

// threadCPU returns the CPU time the calling thread has used
// (getrusage(2) RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pinArgv returns the command line that runs argv on cpu: through taskset(1)
// when it is installed, or argv itself (then startPinned starts it from a
// pinned thread, whose affinity the child inherits).
func pinArgv(cpu int, argv []string) []string {
	if cpu < 0 {
		return argv
	}
	if ts, err := exec.LookPath("taskset"); err == nil {
		return append([]string{ts, "-c", strconv.Itoa(cpu)}, argv...)
	}
	return argv
}

// startPinned starts cmd from a thread pinned to cpu, so that the child
// inherits that affinity (sched_setaffinity(2): a child created by fork
// inherits its parent's CPU affinity mask) even without taskset.
func startPinned(cpu int, cmd *exec.Cmd) error {
	var err error
	<-pinned(cpu, func() { err = cmd.Start() })
	return err
}
