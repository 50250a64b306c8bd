//go:build !linux

package bench

import (
	"os"
	"os/exec"
	"time"
)

// pinned runs fn on a goroutine of its own; CPU pinning and thread CPU time
// are Linux only (the time sent is 0).
func pinned(cpu int, fn func()) <-chan time.Duration {
	ch := make(chan time.Duration, 1)
	go func() {
		fn()
		ch <- 0
	}()
	return ch
}

// datapath runs fn as pinned does.
func datapath(cpu int, fn func()) <-chan time.Duration { return pinned(cpu, fn) }

func pinArgv(cpu int, argv []string) []string { return argv }

func startPinned(cpu int, cmd *exec.Cmd) error { return cmd.Start() }

// waitExited returns false at once: without waitid's WNOWAIT, Wait alone
// waits (and reaps).
func waitExited(p *os.Process) bool { return false }

// killGroup kills p (no process groups here: startPinned makes none).
func killGroup(p *os.Process) { _ = p.Kill() }
