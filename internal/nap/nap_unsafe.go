//go:build linux

package nap

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sleep is nanosleep(2) as a raw system call; EINTR ends it early.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
