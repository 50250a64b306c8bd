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
// docs/BENCHMARKS.md an empty non-blocking recvfrom(2) took 329 ns from a
// Go thread against 271 ns from a single-threaded C program, and 276 ns
// from a Go thread with a table of its own; a C program with a second
// thread measured 325 ns.
package thread
