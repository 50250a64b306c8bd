// Package life holds what the drivers share of a device's life cycle.
package life

import (
	"runtime"
	"sync/atomic"
)

// Readers counts the calls that read a device's kernel state from any
// goroutine (Stats reading the socket's drop counters with getsockopt)
// without the right to tear the device down. A reference of the device's
// own kind would make such a call, when it is the last one out of a closed
// device, run the teardown on its goroutine, and the teardown closes the
// device's Cache, which the owner may still free into. Instead the
// teardown, on the owner's goroutine or Close's, waits for the readers to
// leave (Wait) before it closes the socket. The zero value is ready.
type Readers struct{ n atomic.Int32 }

// Enter registers a reader and reports true, or registers nothing and
// reports false once closed reports true: the device's Close has begun,
// and its teardown may have closed the socket.
func (r *Readers) Enter(closed func() bool) bool {
	r.n.Add(1)
	if closed() {
		r.n.Add(-1)
		return false
	}
	return true
}

// Exit ends what a successful Enter began.
func (r *Readers) Exit() { r.n.Add(-1) }

// Wait returns once no reader is in. Called by the teardown, after the
// device is marked closed, so that no reader enters after it: those in
// make one system call each, microseconds, so it yields the processor
// while it waits rather than sleeping.
func (r *Readers) Wait() {
	for r.n.Load() != 0 {
		runtime.Gosched()
	}
}
