//go:build linux

package lab

// SkipOptionsCheck makes New pass every Options to the kernel unchecked,
// until the returned function restores the check.
func SkipOptionsCheck() (restore func()) {
	checkOptions = func(*Options) error { return nil }
	return func() { checkOptions = (*Options).check }
}
