package main

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel send c's process SIGKILL when the thread
// that starts it exits (prctl(2), PR_SET_PDEATHSIG): the caller keeps that
// thread, with runtime.LockOSThread, until the process has exited. The
// setting survives the exec of ip(8) and ip's exec of the command, which
// are not set-user-ID.
func setPdeathsig(c *exec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
