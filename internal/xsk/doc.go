// Package xsk is the kernel interface of an AF_XDP socket (include/uapi/linux/if_xdp.h,
// Documentation/networking/af_xdp.rst): the socket, the UMEM registration, and the
// four rings mapped from it, with the producer and consumer indices read and
// written through sync/atomic as the kernel's smp_load_acquire and
// smp_store_release pair with them.
//
// # Rings
//
// Each ring is a power-of-two array of entries shared with the kernel, plus a
// producer index, a consumer index and a flags word. The indices are
// free-running 32-bit counters: entry i lives in slot i&mask, the number of
// entries ready is producer-consumer computed modulo 2^32, so wrapping needs no
// special case. One side writes the producer, the other the consumer:
//
//	ring        entries        user space writes   kernel writes
//	fill        uint64 addr    producer            consumer
//	completion  uint64 addr    consumer            producer
//	rx          xdp_desc       consumer            producer
//	tx          xdp_desc       producer            consumer
//
// A ProdRing is a ring user space produces into (fill, tx): Free says how many
// slots are free, the caller writes entries at Index(k) and Produce advances
// its private producer; Submit publishes it with a release store, so the
// kernel sees the entries before the index (libxdp's xsk_ring_prod__reserve
// and __submit). A ConsRing is a ring user space consumes from (completion,
// rx): Peek loads the producer with acquire ordering and says how many entries
// are ready, the caller reads them at Index(k), Consume advances its private
// consumer and Release publishes it (xsk_ring_cons__peek and __release). The
// other side's index is cached and loaded again only when the cached value
// says the ring is empty or full, as the kernel's xsk_queue.h does.
//
// # Without a kernel
//
// NewSim returns a Socket whose rings live in ordinary memory, with a Sim
// that plays the kernel's receive side: it takes the frames posted to the
// fill ring in order and produces rx descriptors for them. Tests and
// benchmarks of a driver's receive path use it with no device, no root and
// no system call.
//
// # What it is not
//
// It knows nothing of socket buffers, pools or XDP programs: package
// driver/afxdp builds the device on it. A Socket and its rings belong to one
// goroutine. Linux only; the package is empty elsewhere.
package xsk
