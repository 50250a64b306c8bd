//go:build linux

package ring

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Region is one shared mapping of a socket's ring memory. It is not safe for
// concurrent Unmap; Bytes may be read from any goroutine while mapped.
type Region struct {
	mem []byte
}

// Map maps size bytes of fd's ring memory from byte offset off, shared and
// readable and writable (mmap(2) with MAP_SHARED), pre-faulted when populate
// is true (MAP_POPULATE). For AF_PACKET off is 0 and the receive ring comes
// first, the transmit ring after it (packet_mmap); AF_XDP passes its
// XDP_PGOFF_* and XDP_UMEM_PGOFF_* offsets. The error wraps the errno.
func Map(fd int, off int64, size int, populate bool) (*Region, error) {
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	mem, err := unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("ring: mmap %d bytes at %d: %w", size, off, err)
	}
	return &Region{mem: mem}, nil
}

// Bytes returns the mapping. The slice is valid until Unmap.
func (r *Region) Bytes() []byte { return r.mem }

// Unmap removes the mapping (munmap(2)); later calls do nothing. Every slice
// of it becomes invalid. The error wraps the errno.
func (r *Region) Unmap() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem = nil
	if err != nil {
		return fmt.Errorf("ring: munmap: %w", err)
	}
	return nil
}
