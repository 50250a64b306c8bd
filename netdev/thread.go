package netdev

import (
	"fmt"

	"github.com/skbdev/skb/internal/thread"
)

// RunOnThread runs fn on a goroutine locked to a new OS thread of its own
// (never the process's main thread) and returns once fn has returned and
// the thread has ended; the thread is never reused. It is the thread for a
// datapath loop (a busy-polling receiver, a generator ringing a doorbell
// per packet): pinned to cpu when cpu >= 0 (sched_setaffinity(2)), and, on
// Linux, with a private copy of the process's file descriptor table
// (unshare(2) CLONE_FILES). Each system call on a descriptor of a table
// shared between threads, as every Go program's is, takes and drops a
// reference on the file (the kernel's fdget and fdput); on a table of one
// thread it does not: an empty non-blocking recvfrom(2) measured 327 ns
// against 277 ns from such a thread (271 ns for single-threaded C); a
// busy-polling ping-pong round trip took 0.2 µs less for a Go program
// making the calls itself and 0.05-0.2 µs less for skb's
// (docs/BENCHMARKS-JOURNAL.md, c-pingpong). A panic in fn happens on fn's goroutine: it ends the
// process, and the caller cannot recover it.
//
// The private table holds the descriptors open at the call, so fn may use
// any device or socket opened before it; the Go runtime's own (its network
// poller's, which it may use from fn's thread) are made before the table is
// copied. fn must not open a descriptor that outlives it or that other
// goroutines use (a file, a socket, a pipe, a process started with os/exec,
// whose pipes and pidfd it holds): it would exist in fn's table only. A
// device closed by fn, or by another goroutine while fn is in one of its
// calls (which wakes fn's Wait and fails its next call with ErrClosed), is
// released in the process's table all the same: the drivers run their
// release on a thread with that table (internal/thread.Shared). fn's own
// copies of the device's descriptors go when fn's thread ends, before
// RunOnThread returns. A device fn opens itself exists in fn's table
// alone: fn must close it, and it is released there.
//
// private reports whether fn ran with a private table: false, with a nil
// error, on platforms other than Linux and where the kernel refused the
// unshare (EPERM under a seccomp filter, as container runtimes install); fn
// then ran with the shared table. err wraps the errno when pinning failed
// (EINVAL: no such CPU, or not in the process's cpuset); fn did not run.
func RunOnThread(cpu int, fn func()) (private bool, err error) {
	// thread.Run ends the thread with fn, pinning and private table with
	// it, and never uses the main thread, which the runtime keeps; the
	// runtime makes its other threads from a thread of its own meanwhile
	// rather than from this one (a locked thread's state is not cloned).
	thread.Run(func() {
		private, err = thread.Dedicate(cpu)
		if err != nil {
			err = fmt.Errorf("netdev: run on thread: %w", err)
			return
		}
		fn()
	})
	return private, err
}
