//go:build linux

package pool

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapArena maps blocks*blockSize bytes of anonymous memory (mmap(2)). With huge
// it tries MAP_HUGETLB first and falls back to base pages with MADV_HUGEPAGE;
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
	mem, err := unix.Mmap(-1, 0, size, prot, flags)
	if err != nil {
		return nil, fmt.Errorf("pool: map arena of %d bytes: %w", size, err)
	}
	a := &Arena{mem: mem, blockSize: blockSize, blocks: blocks}
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

// unmap returns the arena's memory to the system (munmap(2)).
func (a *Arena) unmap() error {
	mem := a.mem
	if a.huge {
		mem = mem[:roundUp(len(mem), hugePageSize)]
	}
	a.mem = nil
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("pool: unmap arena: %w", err)
	}
	return nil
}
