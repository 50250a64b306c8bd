// Package thread prepares the calling goroutine's OS thread to run a
// datapath loop: pinned to a CPU and with a file descriptor table of its
// own.
//
// Every system call on a descriptor looks the descriptor up in the calling
// thread's table. While the table is shared with other threads (every Go
// program's is: the runtime starts its threads with CLONE_FILES), the
// kernel takes and drops a reference on the file around each call (fdget,
// fdput), two atomic operations on a line other threads write; a table
// used by one thread alone skips them. On the 2-vCPU machine of
// docs/BENCHMARKS-JOURNAL.md an empty non-blocking recvfrom(2) took 327
// ns from a Go thread against 271 ns from a single-threaded C program, and
// 277 ns from a Go thread with a table of its own (BenchmarkRecvfromEmpty);
// a C program with a second thread measured 325 ns.
package thread

import "runtime"

// Run runs fn on a goroutine locked to an OS thread other than the
// process's main thread and returns once fn has returned. The goroutine
// exits still locked, so the runtime ends the thread with fn, and with it
// whatever fn changed in the thread (its affinity, a private descriptor
// table and the files it holds). The runtime never ends the main thread,
// where a new goroutine often starts (it is where the caller's goroutine
// runs when it blocks to wait): it parks it for good instead, and a
// private table there would keep every file it held open until the
// process exits. A goroutine that finds itself on the main thread
// therefore holds it while another runs fn, and then gives it back.
//
// Run returns once the thread has ended, not only fn: the kernel closes
// a private table's files as the thread exits, a moment after fn returns,
// and a socket closed by the caller after Run returns must not still be
// bound then (its port, an AF_XDP queue).
func Run(fn func()) {
	done := make(chan struct{})
	var tid int
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if onMain() {
			Run(fn) // cannot start on this thread while it is locked here
			runtime.UnlockOSThread()
			return
		}
		tid = self()
		defer forget() // the thread ends as this goroutine does
		fn()
	}()
	<-done
	if tid != 0 {
		awaitEnd(tid)
	}
}
