package bench

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/skbdev/skb/internal/thread"
	"golang.org/x/sys/unix"
)

// pinned runs fn on a new goroutine locked to its own OS thread, pinned to
// cpu (NoPin: not pinned) with sched_setaffinity(2), and returns a channel
// that receives the CPU time (user and system) the thread spent in fn once
// fn has returned and the thread has ended. The goroutine exits still
// locked, so the thread, with its affinity, is discarded rather than
// reused.
func pinned(cpu int, fn func()) <-chan time.Duration { return pinnedThread(cpu, false, fn) }

// datapath runs fn as pinned does, on a thread that also has a private
// copy of the process's descriptor table, as netdev.RunOnThread gives skb's
// engines in the skb tool: each system call on a device's socket then
// skips the file reference a shared table costs (internal/thread). fn must
// use descriptors opened before and close none.
func datapath(cpu int, fn func()) <-chan time.Duration { return pinnedThread(cpu, true, fn) }

func pinnedThread(cpu int, private bool, fn func()) <-chan time.Duration {
	ch := make(chan time.Duration, 1)
	go func() {
		var cpuTime time.Duration
		thread.Run(func() { // a thread that ends with fn, never the main one
			_ = thread.Pin(cpu) // unpinned is still a measurement
			if private {
				_, _ = thread.Dedicate(-1) // refused, the shared table is still a measurement
			}
			t0 := threadCPU()
			fn()
			cpuTime = threadCPU() - t0
		})
		// Only once the thread has ended (thread.Run waits for it): the
		// kernel closes a private table's copies of the devices' sockets
		// as the thread exits, and a device the caller closes next (an
		// AF_XDP socket, one to a queue) must not still be held then.
		ch <- cpuTime
	}()
	return ch
}

// threadCPU returns the CPU time the calling thread has used
// (getrusage(2) RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pinArgv returns the command line that runs argv on cpu: through taskset(1)
// when it is installed, or argv itself (then startPinned starts it from a
// pinned thread, whose affinity the child inherits).
func pinArgv(cpu int, argv []string) []string {
	if cpu < 0 {
		return argv
	}
	if ts, err := exec.LookPath("taskset"); err == nil {
		return append([]string{ts, "-c", strconv.Itoa(cpu)}, argv...)
	}
	return argv
}

// startPinned starts cmd from a thread pinned to cpu, so that the child
// inherits that affinity (sched_setaffinity(2): a child created by fork
// inherits its parent's CPU affinity mask) even without taskset, and in a
// session of its own (setsid(2)), as a program started from its own
// terminal runs. With the kernel's autogroup scheduling on
// (/proc/sys/kernel/sched_autogroup_enabled), a session is one scheduling
// group, and a group's weight on a CPU is its share of the group's load
// there: a receiver left in the bench's session, beside a sender keeping
// the other CPU busy, weighs a fraction of a nice-0 task against the
// threaded NAPI kernel thread on its own CPU, waits behind it, and drops
// frames when its ring overflows meanwhile (AF_XDP threaded, the C and
// skb receivers alike: 0.91-0.93 of the frames sent delivered by xsk_rx
// in the bench's session, 0.96-0.99 in its own; see
// docs/BENCHMARKS-JOURNAL.md).
// The bench kills such a child when its run ends or is interrupted; out of
// the terminal's process group, a child no longer gets its Ctrl-C, and
// should the bench itself be killed, each ends by its own bound (the C
// programs' -t and idle stops, the tool's --duration and --idle; the C
// ping-pong client by its count of round trips, or never if a reply is
// lost). Out of the terminal's session, a child gets no SIGHUP either.
func startPinned(cpu int, cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	var err error
	<-pinned(cpu, func() { err = cmd.Start() })
	return err
}

// waitExited waits until the process p has exited, without reaping it
// (waitid(2) with WNOWAIT): until its parent's Wait, its id cannot be
// reused, so killGroup still reaches its session's processes by it. It
// reports true: it waited.
func waitExited(p *os.Process) bool {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	return true
}

// killGroup kills (SIGKILL) every process of p's process group, which is
// p's own: startPinned makes p a session leader. Where the group is gone
// it kills p alone, if p still runs.
func killGroup(p *os.Process) {
	if unix.Kill(-p.Pid, unix.SIGKILL) != nil {
		_ = p.Kill()
	}
}
