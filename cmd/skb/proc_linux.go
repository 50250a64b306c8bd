package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

// killTree sends SIGKILL to p and to the processes descending from it
// (descendants), found first (once p is gone, its orphans are init's) and
// killed after p: a shell whose command died first could go on to its
// next command and exit with that one's status, not the kill's.
func killTree(p *os.Process) {
	pids := descendants(p.Pid)
	p.Kill()
	for _, d := range pids {
		syscall.Kill(d, syscall.SIGKILL)
	}
}

// descendants returns the processes whose chain of parents leads to pid,
// from /proc (proc(5): the fourth field of /proc/PID/stat is the parent's
// PID), children before their own children. A process that appears or
// goes while /proc is read may be missed.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name, in parentheses, may hold spaces: the fields
		// after it start after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}
