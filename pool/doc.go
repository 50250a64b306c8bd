// Package pool is where socket buffers come from: data blocks in off-heap
// arenas, buffer headers in slabs, per-worker caches that move buffers in bulk,
// and a page-frag allocator for receive fragments.
//
// # Memory
//
// Packet data lives in arenas: anonymous memory mapped with mmap, page aligned,
// invisible to the garbage collector, optionally populated up front
// (MAP_POPULATE) and backed by huge pages. Each size class carves its arenas
// into fixed-size blocks; a block's address is its offset in its arena, so a
// class configured as one contiguous arena can be registered as an AF_XDP
// UMEM. Buffer headers (skb.Buff) and shared infos (skb.Shared) are ordinary
// Go structs in slabs the pool owns; nothing in an arena is a Go pointer.
//
//	Pool ─┬─ class 512   ─ depot (mutex, bulk moves) ─ arenas [blk|blk|blk|...]
//	      ├─ class 2048  ─ depot                     ─ arenas [blk|blk|...]
//	      ├─ class 69632 ─ depot                     ─ arenas [blk|...]
//	      ├─ pages 32768 ─ depot (page-frag source)  ─ arenas
//	      └─ headers     ─ depot                     ─ slabs of skb.Buff
//
//	Cache (one goroutine): per-class stacks of blocks and a stack of headers,
//	refilled from and drained to the depots half a stack at a time.
//
// # Hot path
//
// A Cache belongs to one goroutine and takes no lock: Alloc pops a block and a
// header, clears the metadata in one store (seed 003) and does not zero packet
// data; Free pushes them back. A depot lock is taken once per bulk move, never
// per buffer, and sync.Pool is not used: it is emptied at every GC. Nothing on
// these paths allocates on the Go heap.
//
// # Bounds and debugging
//
// A class with Max set never grows past Max blocks: Alloc then returns
// ErrExhausted at once, never blocking. Stats counts allocations, frees, cache
// hits and misses and buffers in flight per class. Debug mode records where
// each buffer was allocated and freed, names both in the panic for a double
// free or (built with -tags skbdebug) a use after free, poisons freed data, and
// lists live buffers with Outstanding, as kmemleak does; package pooltest fails
// a test binary that leaks.
//
// # What it is not
//
// It is not a general allocator: blocks have fixed sizes chosen at New, and
// memory goes back to the system only at Close.
package pool
