//go:build !linux

package ring

import (
	"errors"
	"fmt"
)

// Region is one shared mapping of a socket's ring memory (Linux only).
type Region struct{}

// Map returns an error wrapping errors.ErrUnsupported off Linux.
func Map(fd int, off int64, size int, populate bool) (*Region, error) {
	return nil, fmt.Errorf("ring: mmap: %w", errors.ErrUnsupported)
}

// Bytes returns nil off Linux.
func (r *Region) Bytes() []byte { return nil }

// Unmap does nothing off Linux.
func (r *Region) Unmap() error { return nil }
