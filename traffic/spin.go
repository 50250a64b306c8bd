package traffic

import "runtime"

// soleP reports whether the process runs Go code on one P (GOMAXPROCS 1,
// as under taskset -c 0 or a one-CPU container). A goroutine spinning on
// an empty queue there keeps the P that its peer in the same process (the
// sender, echo server or ping-pong client at the other end of a memring
// or loopback pair) needs to make the queue non-empty, until the
// scheduler preempts it some 10 ms later: a ping-pong of 10 µs then takes
// tens of milliseconds a round trip. Spinning loops read it once at their
// start and yield the P (runtime.Gosched) after each empty Poll when it
// is true.
func soleP() bool { return runtime.GOMAXPROCS(0) < 2 }
