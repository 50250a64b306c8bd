//go:build !linux

package main

import (
	"os"
	"os/exec"
)

// setPdeathsig does nothing: the parent-death signal is Linux's.
func setPdeathsig(c *exec.Cmd) {}

// killTree kills p alone: finding its descendants reads Linux's /proc.
func killTree(p *os.Process) { p.Kill() }
