//go:build !linux

package main

import "os/exec"

// setPdeathsig does nothing: the parent-death signal is Linux's.
func setPdeathsig(c *exec.Cmd) {}

// killDescendants does nothing: finding them reads Linux's /proc.
func killDescendants(pid int) {}
