//go:build !linux

package main

import "os/exec"

// setPdeathsig does nothing: the parent-death signal is Linux's.
func setPdeathsig(c *exec.Cmd) {}

// descendants returns none: it reads Linux's /proc.
func descendants(pid int) []int { return nil }
