package bench

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStartProcSession checks that a program the bench runs beside itself
// runs pinned to its CPU and in a session of its own, so that with
// autogroup scheduling it is a scheduling group of its own rather than a
// share of the bench's (see startPinned).
func TestStartProcSession(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep(1) to run: %v", err)
	}
	e := &env{dur: time.Second, sender: -1, receiver: 0}
	p, err := e.startProc(context.Background(), 0, nil, "sleep", sleep, "5")
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	pid := p.cmd.Process.Pid
	sid, err := unix.Getsid(pid)
	if err != nil {
		t.Fatalf("getsid(%d): %v", pid, err)
	}
	if sid != pid {
		t.Errorf("child %d runs in session %d, want a session of its own", pid, sid)
	}
	if own, _ := unix.Getsid(0); sid == own {
		t.Errorf("child %d runs in the test's session %d", pid, own)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		t.Fatalf("sched_getaffinity(%d): %v", pid, err)
	}
	if set.Count() != 1 || !set.IsSet(0) {
		t.Errorf("child %d may run on %d CPUs (CPU 0: %v), want CPU 0 alone", pid, set.Count(), set.IsSet(0))
	}
}

// TestStartProcEnv checks that a program started with extra environment
// variables sees them beside the bench's own, as the C ping-pong run with
// glibc's rseq registration off does.
func TestStartProcEnv(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh(1) to run: %v", err)
	}
	t.Setenv("SKB_TEST_OWN", "kept")
	e := &env{dur: time.Second, sender: -1, receiver: 0}
	p, err := e.startProcEnv(context.Background(), NoPin, nil, "sh", sh, []string{"SKB_TEST_EXTRA=42"},
		"-c", `echo "$SKB_TEST_OWN $SKB_TEST_EXTRA"`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.wait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "kept 42" {
		t.Errorf("the program saw %q; want %q", got, "kept 42")
	}
}

// TestRseqOffEnv checks that the C row without glibc's rseq registration
// keeps the bench's own tunables and adds the one that turns it off.
func TestRseqOffEnv(t *testing.T) {
	t.Setenv("GLIBC_TUNABLES", "glibc.malloc.check=0")
	if got, want := rseqOffEnv(), "GLIBC_TUNABLES=glibc.malloc.check=0:glibc.pthread.rseq=0"; got != want {
		t.Errorf("rseqOffEnv = %q; want %q", got, want)
	}
	t.Setenv("GLIBC_TUNABLES", "")
	if got, want := rseqOffEnv(), "GLIBC_TUNABLES=glibc.pthread.rseq=0"; got != want {
		t.Errorf("rseqOffEnv = %q; want %q", got, want)
	}
}
