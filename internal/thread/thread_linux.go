package thread

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Dedicate pins the calling thread to cpu when cpu >= 0
// (sched_setaffinity(2)) and gives it a private copy of the process's file
// descriptor table (unshare(2) CLONE_FILES). The caller must hold
// runtime.LockOSThread and keep holding it until its goroutine exits, so
// that the runtime never runs another goroutine on the thread, makes its
// new threads from a thread of its own rather than cloning this one, and
// ends this thread with the goroutine: call it from fn of Run, which also
// takes the thread out of the set Shared and Private look at as it ends.
//
// It returns an error wrapping the errno when pinning fails (EINVAL: no
// such CPU, or not in the process's cpuset); private reports whether the
// table is now the thread's own: false, with a nil error, where the
// kernel refused the unshare (EPERM: a seccomp filter, as container
// runtimes install), and the thread keeps the shared table.
func Dedicate(cpu int) (private bool, err error) {
	if err := Pin(cpu); err != nil {
		return false, err
	}
	startPoller()
	if unix.Unshare(unix.CLONE_FILES) != nil {
		return false, nil
	}
	privates.Store(unix.Gettid(), struct{}{})
	nprivate.Add(1)
	return true, nil
}

// Pin pins the calling thread to cpu (sched_setaffinity(2)); a negative cpu
// leaves it as it is. The caller holds runtime.LockOSThread, so that the
// pinning stays with its goroutine. It returns an error wrapping the errno
// (EINVAL: no such CPU, or not in the process's cpuset).
func Pin(cpu int) error {
	if cpu < 0 {
		return nil
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU %d: sched_setaffinity: %w", cpu, err)
	}
	return nil
}

// privates holds the IDs of the threads that took a private table with
// Dedicate and have not ended; nprivate counts them, so that Shared costs
// nothing in a process without any.
var (
	privates sync.Map // thread ID -> struct{}
	nprivate atomic.Int32
)

// forget takes the calling thread out of privates as it ends (Run).
func forget() {
	if _, ok := privates.LoadAndDelete(unix.Gettid()); ok {
		nprivate.Add(-1)
	}
}

// Shared runs fn on the calling goroutine when the calling thread uses the
// process's descriptor table, and otherwise, when it took a private one
// with Dedicate, on another goroutine (which runs on a thread with the
// process's table: a locked thread runs no other goroutine), waiting for
// it. A device's release runs in Shared, so that the descriptors it closes
// are closed in the process's table whichever thread releases it: a
// device closed from another goroutine while a call of fn's was in
// progress releases on fn's thread, where a close would close fn's copy
// only and leave the process's open until exit (its port bound, its AF_XDP
// queue busy). fn's copies go when fn's thread ends. Descriptors opened on
// a thread with a private table are not in the process's table: they are
// released with Release.
func Shared(fn func()) {
	if !Private() {
		fn()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// Private reports whether the calling thread took a private descriptor
// table with Dedicate. A descriptor opened on such a thread exists in its
// table alone, so a device notes Private at Open and releases with
// Release: a release in Shared would close that number in the process's
// table, where it names another file or none.
func Private() bool {
	if nprivate.Load() == 0 {
		return false
	}
	_, ok := privates.Load(unix.Gettid())
	return ok
}

// Release runs fn, a release of descriptors, in the table they were opened
// in: on the calling goroutine when they were opened on a thread with a
// private table (openedPrivate, from Private at the open; the release then
// runs on that thread, the one goroutine allowed to use them), and
// otherwise in Shared.
func Release(openedPrivate bool, fn func()) {
	if openedPrivate {
		fn()
		return
	}
	Shared(fn)
}

// onMain reports whether the calling thread is the process's main thread
// (its thread ID is the process ID, gettid(2)).
func onMain() bool { return unix.Gettid() == unix.Getpid() }

// self returns the calling thread's ID (gettid(2)).
func self() int { return unix.Gettid() }

// awaitEnd waits, up to a second, until thread tid of this process has
// exited: tgkill(2) with signal 0 then fails with ESRCH. The kernel takes
// a thread out of the process after it closed its files (do_exit: exit_files,
// then exit_notify), so its private table's files are released by then.
func awaitEnd(tid int) {
	pid := unix.Getpid()
	for deadline := time.Now().Add(time.Second); unix.Tgkill(pid, tid, 0) == nil && time.Now().Before(deadline); {
		time.Sleep(20 * time.Microsecond)
	}
}

// pollerOnce makes sure the Go runtime's network poller exists before any
// thread takes a private table.
var pollerOnce sync.Once

// startPoller starts the runtime's network poller, if nothing has yet, by
// opening and closing a pipe (os.Pipe registers both ends with it). The
// poller's descriptors (its epoll instance and the eventfd that wakes it)
// are made once per process, on whichever thread first needs them, and the
// runtime uses them from any thread, a locked one included: it polls on
// the thread that restarts the world after a garbage collection, and wakes
// the poller from the thread that sets a timer. Made after a thread took
// its private table, they would not be in that table, and the runtime
// aborts ("netpoll failed", errno EBADF) the first time that thread uses
// them.
func startPoller() {
	pollerOnce.Do(func() {
		if r, w, err := os.Pipe(); err == nil {
			r.Close()
			w.Close()
		}
	})
}
