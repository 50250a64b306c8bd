// Package ring maps the shared-memory rings through which the kernel and a
// process pass packets without a copy per system call (AF_PACKET's
// PACKET_RX_RING and PACKET_TX_RING, AF_XDP's fill, completion, RX and TX
// rings), and gives the two memory accesses such a ring needs: a load with
// acquire order of a word the kernel writes last (a status or producer
// index), and a store with release order of a word the process writes last.
//
//	   process                               kernel
//	fill frame bytes ──────┐          ┌────── fill frame bytes
//	Store32(status) ───────┼─ ring ───┼────── smp_store_release(status)
//	Load32(status)  <──────┘          └─────> smp_load_acquire(status)
//
// A Region is one mmap(2) of a socket's ring memory (MAP_SHARED, read and
// write); Bytes is the mapping as a slice, valid until Unmap. The layout of
// the bytes (block descriptors, frame headers, producer and consumer
// indices) belongs to the caller: package ring knows nothing of AF_PACKET or
// AF_XDP, so both drivers use it. Load32 and Store32 take a byte offset into
// any slice of the mapping, which must be 4-byte aligned.
//
// The memory is outside the Go heap: it must never hold a Go pointer, and a
// slice of it must not be used after Unmap (the access faults). Linux only;
// elsewhere Map returns an error wrapping errors.ErrUnsupported.
package ring
