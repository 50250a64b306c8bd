package pool

// Arena is one region of memory carved into fixed-size blocks: the blocks of a
// size class, or of the page-frag source. Block i occupies
// Bytes()[i*BlockSize() : (i+1)*BlockSize()], and a buffer's skb HeadAddr is
// the offset of its block in its arena. An Arena of a Contiguous class is the
// layout AF_XDP wants for a UMEM: register Bytes() with XDP_UMEM_REG and
// BlockSize() as the chunk size.
type Arena struct {
	mem       []byte
	blockSize int
	blocks    int
	huge      bool // backed by explicit huge pages (MAP_HUGETLB)
	thp       bool // transparent huge pages were requested (MADV_HUGEPAGE)
	mapped    int  // bytes mapped with MmapPtr (huge pages: whole ones), 0 for unix.Mmap
	heap      bool // Go heap memory (platforms without mmap)
}

// Bytes returns the whole region. The slice aliases memory that buffers use;
// it is valid until the pool is closed.
func (a *Arena) Bytes() []byte { return a.mem }

// BlockSize returns the size of each block, in bytes.
func (a *Arena) BlockSize() int { return a.blockSize }

// Blocks returns the number of blocks in the arena.
func (a *Arena) Blocks() int { return a.blocks }

// HugePages reports whether the arena is backed by explicit huge pages
// (MAP_HUGETLB) rather than base pages.
func (a *Arena) HugePages() bool { return a.huge }

// hugePageSize is the x86-64 and arm64 default huge page, 2 MiB.
const hugePageSize = 2 << 20

// firstArenaBytes is about how much a class's first arena maps when
// Class.ArenaBlocks is 0 (and the pool has no HugePages): the first
// allocation of a class makes that many blocks' headers at once.
const firstArenaBytes = 256 << 10

// pageSize is the base page size arenas are rounded to.
const pageSize = 4096

func roundUp(n, to int) int { return (n + to - 1) / to * to }
