package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestProcLeftovers checks that nothing a program started outlives it: a
// child it left running when it exited (holding its output pipes, or not)
// and one running when the bench kills it are killed with it, and the
// bench's wait returns at once with the program's output rather than when
// those children end.
func TestProcLeftovers(t *testing.T) {
	e := &env{sender: NoPin, receiver: NoPin}
	for _, tc := range []struct {
		name, script string
		timeout      time.Duration
		wantOut      string
		wantErr      string
	}{
		{"a child holding the output, left running at exit",
			`sleep 30 & echo $! > "$PIDFILE"; echo "PINGPONG p50_us=10"`, 10 * time.Second, "PINGPONG p50_us=10", ""},
		{"a child with its own output, left running at exit",
			`sleep 30 </dev/null >/dev/null 2>&1 & echo $! > "$PIDFILE"; echo done`, 10 * time.Second, "done", ""},
		{"a child running when the bench kills the program",
			`sleep 30 & echo $! > "$PIDFILE"; echo started; wait`, 300 * time.Millisecond, "started", "did not finish within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			p, err := e.startProcEnv(context.Background(), NoPin, nil, "fake", "/bin/sh", []string{"PIDFILE=" + pidfile}, "-c", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := p.wait(tc.timeout)
			if took := time.Since(start); took > tc.timeout+3*time.Second {
				t.Errorf("wait took %v: it waited for the program's child", took)
			}
			if strings.TrimSpace(out) != tc.wantOut || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("output %q, error %v; want %q and an error with %q", out, err, tc.wantOut, tc.wantErr)
			}
			b, rerr := os.ReadFile(pidfile)
			pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
			if rerr != nil || perr != nil {
				t.Fatalf("the child's pid: %v %v", rerr, perr)
			}
			// The child is killed, then reaped by init (a zombie until
			// then, which counts as gone).
			for deadline := time.Now().Add(5 * time.Second); running(pid); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = unix.Kill(pid, unix.SIGKILL)
					t.Fatalf("the program's child %d outlived it", pid)
				}
			}
		})
	}
}

// TestProcOutputBounded checks that the bench keeps a bounded part of a
// program's output (maxOutput), however much it prints, and quotes at
// most a short line of it in an error.
func TestProcOutputBounded(t *testing.T) {
	e := &env{sender: NoPin, receiver: NoPin}
	p, err := e.startProc(context.Background(), NoPin, nil, "fake", "/bin/sh", "-c",
		`head -c 3000000 /dev/zero | tr '\0' y; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.wait(20 * time.Second)
	if len(out) != maxOutput {
		t.Errorf("kept %d bytes of the output; want %d", len(out), maxOutput)
	}
	if err == nil || len(err.Error()) > maxLineQuote+100 || !strings.Contains(err.Error(), "exit status 3: yyy") || !strings.HasSuffix(err.Error(), "...") {
		t.Errorf("error of %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
	p, err = e.startProc(context.Background(), NoPin, nil, "fake", "/bin/sh", "-c", `exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.wait(10 * time.Second); err == nil || err.Error() != "fake: exit status 3 (it printed nothing)" {
		t.Errorf("a silent failure: %v", err)
	}
}

// running reports whether the process pid exists and is no zombie (a
// killed orphan stays one until init reaps it, which here can take
// seconds).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}

// TestWithServerExit checks that a ping-pong client's failure names the
// server's own error when the server had exited first.
func TestWithServerExit(t *testing.T) {
	e := &env{sender: NoPin, receiver: NoPin}
	srv, err := e.startProc(context.Background(), NoPin, nil, "pingpong", "/bin/sh", "-c", `echo "bind: Address already in use" >&2; exit 1`)
	if err != nil {
		t.Fatal(err)
	}
	<-srv.done
	cerr := errors.New("pingpong: exit status 1: recv: Connection refused")
	if err := withServerExit(cerr, srv); !errors.Is(err, cerr) || !strings.HasSuffix(err.Error(), "(the server had exited: bind: Address already in use)") {
		t.Errorf("server gone: %v", err)
	}
	live, err := e.startProc(context.Background(), NoPin, nil, "pingpong", "/bin/sh", "-c", `exec sleep 5`)
	if err != nil {
		t.Fatal(err)
	}
	defer live.stop()
	if err := withServerExit(cerr, live); err != cerr {
		t.Errorf("server running: %v, want the client's error alone", err)
	}
}
