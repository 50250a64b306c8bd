//go:build !linux

package rseq

// Registered reports false: only Linux has rseq(2).
func Registered() (bool, error) { return false, nil }

// Reexec does nothing: only Linux has rseq(2).
func Reexec() error { return nil }
