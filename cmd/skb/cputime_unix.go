//go:build unix

package main

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTimes returns the user and system CPU time the process has used, in
// seconds (getrusage(2)), as the C reference tools print them: CPU per
// packet is a steadier figure than packets per second on a shared machine.
func cpuTimes() (user, sys float64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()
}

// signalName returns the signal's name as kill(1) spells it ("SIGINT").
func signalName(s syscall.Signal) string { return unix.SignalName(s) }
