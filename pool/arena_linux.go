//go:build linux

package pool

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapArena maps blocks*blockSize bytes of anonymous memory (mmap(2)). With
// huge it maps whole huge pages: with MAP_HUGETLB first, and failing that
// base pages from a huge page boundary (mapAligned) advised MADV_HUGEPAGE,
// so that transparent huge pages can back them; the arena uses the first
// bytes of the mapping. populate adds MAP_POPULATE (or MADV_POPULATE_WRITE)
// so that no page faults happen on the datapath.
func mapArena(blockSize, blocks int, huge, populate bool) (*Arena, error) {
	size := roundUp(blockSize*blocks, pageSize)
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	prot := unix.PROT_READ | unix.PROT_WRITE
	if !huge {
		if populate {
			flags |= unix.MAP_POPULATE
		}
		mem, err := unix.Mmap(-1, 0, size, prot, flags)
		if err != nil {
			return nil, fmt.Errorf("pool: map arena of %d bytes: %w", size, err)
		}
		return &Arena{mem: mem, blockSize: blockSize, blocks: blocks}, nil
	}
	hsize := roundUp(size, hugePageSize)
	hflags := flags | unix.MAP_HUGETLB
	if populate {
		hflags |= unix.MAP_POPULATE
	}
	if p, err := unix.MmapPtr(-1, 0, nil, uintptr(hsize), prot, hflags); err == nil {
		mem := unsafe.Slice((*byte)(p), size)
		return &Arena{mem: mem, mapped: hsize, blockSize: blockSize, blocks: blocks, huge: true}, nil
	}
	p, err := mapAligned(hsize, prot, flags)
	if err != nil {
		return nil, fmt.Errorf("pool: map arena of %d bytes: %w", hsize, err)
	}
	mem := unsafe.Slice((*byte)(p), size)
	a := &Arena{mem: mem, mapped: hsize, blockSize: blockSize, blocks: blocks}
	// Advise before the pages exist, so that populating faults in huge
	// pages (MAP_POPULATE would have faulted in base pages first).
	whole := unsafe.Slice((*byte)(p), hsize)
	a.thp = unix.Madvise(whole, unix.MADV_HUGEPAGE) == nil
	if populate && unix.Madvise(mem, unix.MADV_POPULATE_WRITE) != nil {
		// Kernels before 5.14: touch one byte per page.
		for i := 0; i < len(mem); i += pageSize {
			mem[i] = 0
		}
	}
	return a, nil
}

// mapAligned maps size bytes (a multiple of a huge page) of anonymous
// memory starting on a huge page boundary, so that transparent huge pages
// can back all of it: the kernel aligns only mappings that are a multiple
// of a huge page long, and only since Linux 6.7. It maps size plus a huge
// page less a base page and unmaps what lies before the boundary and after
// size.
func mapAligned(size, prot, flags int) (unsafe.Pointer, error) {
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
	return unsafe.Add(p, head), nil
}

// unmap returns the arena's memory to the system (munmap(2)): all of its
// mapping, which for huge pages is longer than the arena.
func (a *Arena) unmap() error {
	mem := a.mem
	a.mem = nil
	var err error
	if a.mapped > 0 {
		err = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(mem)), uintptr(a.mapped))
	} else {
		err = unix.Munmap(mem)
	}
	if err != nil {
		return fmt.Errorf("pool: unmap arena: %w", err)
	}
	return nil
}
