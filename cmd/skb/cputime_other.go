//go:build !unix

package main

import "syscall"

// cpuTimes returns 0, 0: the process's CPU time comes from getrusage(2),
// which this system does not have.
func cpuTimes() (user, sys float64) { return 0, 0 }

// signalName returns the signal's name as Go's syscall package spells it.
func signalName(s syscall.Signal) string { return s.String() }
