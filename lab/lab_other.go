//go:build !linux

package lab

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
)

// The lab is made of Linux network namespaces and veth; elsewhere every entry
// point returns an error wrapping errors.ErrUnsupported.

func unsupported(op string) error {
	return fmt.Errorf("lab: %s: %w on %s (needs Linux network namespaces)", op, errors.ErrUnsupported, runtime.GOOS)
}

// New returns an error wrapping errors.ErrUnsupported: labs need Linux.
func New(opts Options) (*Lab, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	return nil, unsupported("new")
}

// Open returns an error wrapping errors.ErrUnsupported: labs need Linux.
func Open(name string) (*Lab, error) { return nil, unsupported("open") }

// Remove returns an error wrapping errors.ErrUnsupported: labs need Linux.
func Remove(name string) error { return unsupported("remove") }

// Procs returns an error wrapping errors.ErrUnsupported: labs need Linux.
func Procs(name string) ([]int, error) { return nil, unsupported("procs") }

// List returns an error wrapping errors.ErrUnsupported: labs need Linux.
func List() ([]Info, error) { return nil, unsupported("list") }

// Cleanup returns an error wrapping errors.ErrUnsupported: labs need Linux.
func Cleanup() ([]string, error) { return nil, unsupported("cleanup") }

// Privileged returns an error wrapping errors.ErrUnsupported: labs need Linux.
func Privileged() error { return unsupported("privileges") }

// Close does nothing and returns nil: no lab exists off Linux.
func (l *Lab) Close() error { return nil }

// Release does nothing and returns nil: no lab exists off Linux.
func (l *Lab) Release() error { return nil }

// SetThreaded returns an error wrapping errors.ErrUnsupported.
func (l *Lab) SetThreaded(on bool) error { return unsupported("set threaded") }

// PinNAPI returns an error wrapping errors.ErrUnsupported.
func (l *Lab) PinNAPI(cpu int) (int, error) { return 0, unsupported("pin NAPI") }

// SetOffloads returns an error wrapping errors.ErrUnsupported.
func (l *Lab) SetOffloads(gro, tso, txcsum Toggle) error { return unsupported("set offloads") }

// Do returns an error wrapping errors.ErrUnsupported without running fn.
func (h *Host) Do(fn func() error) error { return unsupported("do") }

// Cmd returns a command whose Start fails with an error wrapping
// errors.ErrUnsupported.
func (h *Host) Cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Err = unsupported("cmd")
	return c
}

// SetThreaded returns an error wrapping errors.ErrUnsupported.
func (h *Host) SetThreaded(on bool) error { return unsupported("set threaded") }

// PinNAPI returns an error wrapping errors.ErrUnsupported.
func (h *Host) PinNAPI(cpu int) (int, error) { return 0, unsupported("pin NAPI") }

// XDPAttached returns an error wrapping errors.ErrUnsupported.
func (h *Host) XDPAttached() (bool, error) { return false, unsupported("read the XDP attachment") }

// Threaded returns an error wrapping errors.ErrUnsupported.
func (h *Host) Threaded() (bool, error) { return false, unsupported("read threaded") }

// SetOffloads returns an error wrapping errors.ErrUnsupported.
func (h *Host) SetOffloads(gro, tso, txcsum Toggle) error { return unsupported("set offloads") }

// Features returns an error wrapping errors.ErrUnsupported.
func (h *Host) Features() (Features, error) { return Features{}, unsupported("read offloads") }
