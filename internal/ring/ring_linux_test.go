//go:build linux

package ring

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestMapMemfd maps a memfd twice: a store through one mapping is seen
// through the other, as a kernel write to a socket ring is.
func TestMapMemfd(t *testing.T) {
	fd, err := unix.MemfdCreate("ring-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 4096); err != nil {
		t.Fatal(err)
	}
	a, err := Map(fd, 0, 4096, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Map(fd, 0, 4096, false)
	if err != nil {
		t.Fatal(err)
	}
	Store32(a.Bytes(), 100, 7)
	if got := Load32(b.Bytes(), 100); got != 7 {
		t.Fatalf("second mapping reads %d, want 7", got)
	}
	if err := a.Unmap(); err != nil {
		t.Fatal(err)
	}
	if err := a.Unmap(); err != nil {
		t.Fatalf("second Unmap: %v", err)
	}
	if a.Bytes() != nil {
		t.Fatal("Bytes after Unmap is not nil")
	}
	if err := b.Unmap(); err != nil {
		t.Fatal(err)
	}
}
