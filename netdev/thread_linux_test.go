package netdev

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunOnThread runs fn on a thread pinned to CPU 0 with a private
// descriptor table: a descriptor opened before is usable there, closing it
// there leaves the process's open, and a CPU that does not exist is an
// error before fn runs.
func TestRunOnThread(t *testing.T) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var set unix.CPUSet
	var usable, gone error
	ran := false
	private, err := RunOnThread(0, func() {
		ran = true
		_ = unix.SchedGetaffinity(0, &set)
		_, usable = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		unix.Close(fd)
		_, gone = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	})
	if err != nil || !ran {
		t.Fatalf("RunOnThread: %v (fn ran: %v)", err, ran)
	}
	if set.Count() != 1 || !set.IsSet(0) {
		t.Errorf("fn may run on %d CPUs (CPU 0: %v), want CPU 0 alone", set.Count(), set.IsSet(0))
	}
	if usable != nil {
		t.Errorf("descriptor opened before is not usable in fn: %v", usable)
	}
	if !private {
		t.Skip("the kernel refused a private descriptor table here (seccomp?)")
	}
	if !errors.Is(gone, unix.EBADF) {
		t.Errorf("descriptor closed in fn still open in fn's table: %v", gone)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		t.Errorf("closing in fn closed the process's descriptor: %v", err)
	}

	ran = false
	if _, err := RunOnThread(1<<20, func() { ran = true }); !errors.Is(err, unix.EINVAL) || ran {
		t.Errorf("RunOnThread(1<<20) = %v, fn ran: %v; want EINVAL and no run", err, ran)
	}
}
