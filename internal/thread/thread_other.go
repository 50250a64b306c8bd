//go:build !linux

package thread

// Dedicate does nothing on this platform: threads are not pinned and keep
// the process's descriptor table (private is false, err nil).
func Dedicate(cpu int) (private bool, err error) { return false, nil }

// onMain reports false: on this platform Dedicate changes nothing that
// the main thread could keep.
func onMain() bool { return false }

// self returns 0: Run has no thread to wait for on this platform.
func self() int { return 0 }

// awaitEnd does nothing.
func awaitEnd(tid int) {}

// forget does nothing: no thread has a private table here.
func forget() {}

// Shared runs fn: every thread uses the process's descriptor table here.
func Shared(fn func()) { fn() }

// Private reports false: no thread has a private table here.
func Private() bool { return false }

// Release runs fn: every thread uses the process's descriptor table here.
func Release(openedPrivate bool, fn func()) { fn() }

// Pin does nothing on this platform: threads are not pinned.
func Pin(cpu int) error { return nil }
