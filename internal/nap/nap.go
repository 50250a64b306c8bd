// Package nap sleeps for microseconds without the Go scheduler's system-call
// path, for receivers that nap between polls while traffic flows.
//
// A receiver that sleeps 50 µs whenever its queue is empty does so thousands
// of times a second. Through the scheduler's system-call path
// (syscall.Syscall, time.Sleep) each sleep longer than 20 µs lets the
// runtime's monitor thread take the goroutine's P and hand it back when the
// sleep ends: two thread wake-ups per nap on top of the receive work
// (measured on the AF_XDP receiver: 2.3 s of CPU in 3 s at 670 kpps, against
// 0.4 s for a C receiver napping the same way). Sleep instead enters
// nanosleep(2) as a raw system call and keeps the P: no other goroutine runs
// on it meanwhile, so a caller napping in a loop yields it now and then
// (Yield).
package nap

import "time"

// YieldEvery is how many naps a caller napping in a loop takes between two
// calls to runtime.Gosched, so that other goroutines get the P it holds.
const YieldEvery = 16

// Max is the longest nap Sleep takes as a raw system call, in ns; longer
// ones go through time.Sleep, which lets the scheduler use the P meanwhile.
const Max = time.Millisecond

// Sleep blocks the calling thread for d (plus the thread's timer slack, 50
// µs by default; prctl(2) PR_SET_TIMERSLACK). For d up to Max it calls
// nanosleep(2) directly, keeping the P; a signal ends the nap early. Longer
// naps use time.Sleep.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	if d > Max {
		time.Sleep(d)
		return
	}
	sleep(d)
}
