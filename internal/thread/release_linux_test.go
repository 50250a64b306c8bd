package thread

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRelease closes, with Release, a descriptor opened on a dedicated
// thread (Private then true): it is closed in that thread's table, and
// the process's descriptor of the same number, opened meanwhile, stays
// open. A descriptor opened before, released on the same thread with
// Private false at its open, is closed in the process's table (Shared).
func TestRelease(t *testing.T) {
	before, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	var private, atOpen, outside bool
	var mine, theirs int
	var mineErr, theirsErr, dErr error
	Run(func() {
		outside = Private()
		if private, dErr = Dedicate(-1); dErr != nil || !private {
			return
		}
		if mine, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
			return
		}
		atOpen = Private()
		ch := make(chan int)
		go func() { // the process's table: often the same number as mine
			fd, _ := unix.Eventfd(0, unix.EFD_CLOEXEC)
			ch <- fd
		}()
		theirs = <-ch
		Release(atOpen, func() { unix.Close(mine) })
		_, mineErr = unix.FcntlInt(uintptr(mine), unix.F_GETFD, 0)
		Release(false, func() { unix.Close(before) })
	})
	if dErr != nil || err != nil {
		t.Fatal(dErr, err)
	}
	if !private {
		unix.Close(before)
		t.Skip("the kernel refused unshare(CLONE_FILES) here (seccomp?)")
	}
	if outside || !atOpen {
		t.Errorf("Private: %v before Dedicate, %v after; want false, true", outside, atOpen)
	}
	if !errors.Is(mineErr, unix.EBADF) {
		t.Errorf("descriptor %d opened and released on the dedicated thread is still open there: %v", mine, mineErr)
	}
	_, theirsErr = unix.FcntlInt(uintptr(theirs), unix.F_GETFD, 0)
	unix.Close(theirs)
	if theirsErr != nil {
		t.Errorf("releasing descriptor %d of the dedicated thread closed the process's descriptor %d: %v", mine, theirs, theirsErr)
	}
	if _, err := unix.FcntlInt(uintptr(before), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("descriptor %d opened before and released in Shared is still open in the process's table: %v", before, err)
		unix.Close(before)
	}
	if Private() {
		t.Errorf("Private on the test's goroutine")
	}
}
