//go:build !linux

package pool

// mapArena falls back to Go heap memory on platforms other than Linux: the
// blocks hold no Go pointers, so the collector scans nothing in them, but the
// memory is not page aligned for DMA and huge pages are not used.
func mapArena(blockSize, blocks int, huge, populate bool) (*Arena, error) {
	size := roundUp(blockSize*blocks, pageSize)
	return &Arena{mem: make([]byte, size), blockSize: blockSize, blocks: blocks, heap: true}, nil
}

func (a *Arena) unmap() error {
	a.mem = nil
	return nil
}
