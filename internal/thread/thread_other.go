//go:build !linux

package thread

// Dedicate does nothing on this platform: threads are not pinned and keep
// the process's descriptor table (private is false, err nil).
func Dedicate(cpu int) (private bool, err error) { return false, nil }
