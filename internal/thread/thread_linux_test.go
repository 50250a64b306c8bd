package thread

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/thread/threadtest"
)

func TestMain(m *testing.M) {
	if os.Getenv("SKB_THREAD_MAIN") == "1" {
		runMainChild()
		return
	}
	os.Exit(m.Run())
}

// runMainChild, on the main goroutine of a fresh process, gives Run the
// main thread: with one P, the goroutine Run starts is the one the main
// thread runs once the main goroutine blocks. It dedicates fn's thread,
// closes the write end of a pipe opened before, and prints "released"
// when the read end then reads end-of-file: no table still holds the
// write end.
func runMainChild() {
	runtime.GOMAXPROCS(1)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		fmt.Println("pipe:", err)
		return
	}
	var tid int
	Run(func() {
		tid = unix.Gettid()
		if _, err := Dedicate(-1); err != nil {
			fmt.Println("dedicate:", err)
		}
	})
	unix.Close(p[1])
	n, err := unix.Read(p[0], make([]byte, 1))
	fmt.Printf("fn on main thread: %v\n", tid == unix.Getpid())
	if n == 0 && err == nil {
		fmt.Println("released")
	} else {
		fmt.Printf("write end still open somewhere: read %d, %v\n", n, err)
	}
}

// TestRunNotMain runs Run from the main goroutine of a fresh process
// (this test binary, run again), where its goroutine would start on the
// main thread: fn must run elsewhere, since the runtime parks the main
// thread for good instead of ending it, and a private table there would
// keep open every descriptor it held.
func TestRunNotMain(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SKB_THREAD_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "released") {
		t.Fatalf("child: %v\n%s", err, firstLines(string(out), 8))
	}
}

// onLocked runs fn with Run, on a locked thread that ends with it (which
// also takes a thread that called Dedicate out of the private set), as
// Dedicate asks of its callers.
func onLocked(fn func()) { Run(fn) }

// TestDedicatePrivateTable closes, on a dedicated thread, a descriptor
// opened before: it is gone from that thread's table and still open in the
// process's.
func TestDedicatePrivateTable(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var private bool
	var dErr, before, after error
	onLocked(func() {
		private, dErr = Dedicate(-1)
		_, before = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		unix.Close(fd)
		_, after = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	})
	if dErr != nil {
		t.Fatal(dErr)
	}
	if !private {
		t.Skip("the kernel refused unshare(CLONE_FILES) here (seccomp?)")
	}
	if before != nil {
		t.Fatalf("descriptor %d opened before Dedicate is not in the private table: %v", fd, before)
	}
	if !errors.Is(after, unix.EBADF) {
		t.Fatalf("descriptor %d still open in the private table after close: %v", fd, after)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		t.Fatalf("closing descriptor %d in the private table closed the process's: %v", fd, err)
	}
}

// TestDedicatePin pins the thread to CPU 0, and refuses a CPU that does
// not exist.
func TestDedicatePin(t *testing.T) {
	var set unix.CPUSet
	var err, getErr error
	onLocked(func() {
		_, err = Dedicate(0)
		getErr = unix.SchedGetaffinity(0, &set)
	})
	if err != nil || getErr != nil {
		t.Fatal(err, getErr)
	}
	if set.Count() != 1 || !set.IsSet(0) {
		t.Fatalf("thread may run on %d CPUs (CPU 0: %v), want CPU 0 alone", set.Count(), set.IsSet(0))
	}
	onLocked(func() { _, err = Dedicate(1 << 20) })
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Dedicate(1<<20) = %v, want EINVAL", err)
	}
}

// TestDedicateBeforePoller takes a private table before anything in the
// process has started the runtime's network poller, then starts it from
// another thread and has the dedicated thread run a garbage collection and
// a timer, which use the poller's descriptors from that thread. Without
// startPoller the runtime aborts ("netpoll failed"); the test runs it in a
// fresh process (this test binary, run again) to have no poller yet.
func TestDedicateBeforePoller(t *testing.T) {
	if os.Getenv("SKB_THREAD_CHILD") == "1" {
		onLocked(func() {
			if _, err := Dedicate(-1); err != nil {
				fmt.Println("dedicate:", err)
				return
			}
			done := make(chan struct{})
			go func() { // another thread: the poller's descriptors go to the shared table
				if r, w, err := os.Pipe(); err == nil {
					r.Close()
					w.Close()
				}
				close(done)
			}()
			<-done
			for range 3 {
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
			fmt.Println("child ok")
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDedicateBeforePoller$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SKB_THREAD_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child ok") {
		t.Fatalf("child: %v\n%s", err, firstLines(string(out), 8))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// TestRunReleases closes, as soon as Run returns, a socket opened before
// a Run whose fn took a private table, and binds its port again: fn's
// thread, and the copy of the socket in its table, must be gone by then.
func TestRunReleases(t *testing.T) {
	threadtest.Releases(t, 200, func() { Run(func() { _, _ = Dedicate(-1) }) })
}

// TestShared runs fn in Shared from a thread with a private table: fn runs
// on another thread, and a descriptor it closes is closed in the process's
// table; from an ordinary thread, fn runs on the caller's.
func TestShared(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	var tid, fnTid int
	var private bool
	Run(func() {
		if private, err = Dedicate(-1); err != nil || !private {
			return
		}
		tid = unix.Gettid()
		Shared(func() {
			fnTid = unix.Gettid()
			unix.Close(fd)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !private {
		unix.Close(fd)
		t.Skip("the kernel refused unshare(CLONE_FILES) here (seccomp?)")
	}
	if fnTid == tid {
		t.Errorf("Shared ran fn on the private thread %d", tid)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("descriptor %d closed in Shared is still open in the process's table: %v", fd, err)
		unix.Close(fd)
	}
	onLocked(func() {
		tid = unix.Gettid()
		Shared(func() { fnTid = unix.Gettid() })
	})
	if fnTid != tid {
		t.Errorf("Shared moved fn from an ordinary thread %d to %d", tid, fnTid)
	}
}
