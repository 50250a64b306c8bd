//go:build linux

package pool

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapArena maps blocks*blockSize bytes of anonymous memory (mmap(2)). With huge
// it tries MAP_HUGETLB first and falls back to base pages with MADV_HUGEPAGE,
// mapped from a huge page boundary (mapAligned);
// populate adds MAP_POPULATE so that no page faults happen on the datapath.
func mapArena(blockSize, blocks int, huge, populate bool) (*Arena, error) {
	size := roundUp(blockSize*blocks, pageSize)
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	prot := unix.PROT_READ | unix.PROT_WRITE
	if huge {
		hsize := roundUp(size, hugePageSize)
		hflags := flags | unix.MAP_HUGETLB
		if populate {
			hflags |= unix.MAP_POPULATE
		}
		if mem, err := unix.Mmap(-1, 0, hsize, prot, hflags); err == nil {
			return &Arena{mem: mem[:size:size], blockSize: blockSize, blocks: blocks, huge: true}, nil
		}
	}
	if populate && !huge {
		flags |= unix.MAP_POPULATE
	}
	var mem []byte
	var err error
	if huge {
		mem, err = mapAligned(size, prot, flags)
	} else {
		mem, err = unix.Mmap(-1, 0, size, prot, flags)
	}
	if err != nil {
		return nil, fmt.Errorf("pool: map arena of %d bytes: %w", size, err)
	}
	a := &Arena{mem: mem, blockSize: blockSize, blocks: blocks, aligned: huge}
	if huge {
		// Advise before the pages exist, so that populating faults in huge
		// pages (MAP_POPULATE would have faulted in base pages first).
		a.thp = unix.Madvise(mem, unix.MADV_HUGEPAGE) == nil
		if populate && unix.Madvise(mem, unix.MADV_POPULATE_WRITE) != nil {
			// Kernels before 5.14: touch one byte per page.
			for i := 0; i < len(mem); i += pageSize {
				mem[i] = 0
			}
		}
	}
	return a, nil
}

// mapAligned maps size bytes of anonymous memory starting on a huge page
// boundary, so that transparent huge pages can back every whole huge page
// of it: the kernel aligns only mappings that are a multiple of a huge
// page long (and only since Linux 6.7). It maps size plus a huge page less
// a base page and unmaps what lies before the boundary and after size.
func mapAligned(size, prot, flags int) ([]byte, error) {
	extra := hugePageSize - pageSize
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size+extra), prot, flags)
	if err != nil {
		return nil, err
	}
	head := int(-uintptr(p) & (hugePageSize - 1))
	if head > 0 {
		unix.MunmapPtr(p, uintptr(head))
	}
	if tail := extra - head; tail > 0 {
		unix.MunmapPtr(unsafe.Add(p, head+size), uintptr(tail))
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, head)), size), nil
}

// unmap returns the arena's memory to the system (munmap(2)).
func (a *Arena) unmap() error {
	mem := a.mem
	a.mem = nil
	var err error
	switch {
	case a.huge:
		err = unix.Munmap(mem[:roundUp(len(mem), hugePageSize)])
	case a.aligned:
		err = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem)))
	default:
		err = unix.Munmap(mem)
	}
	if err != nil {
		return fmt.Errorf("pool: unmap arena: %w", err)
	}
	return nil
}
