// Package memring is a simulated NIC: two devices joined by descriptor rings
// in memory. It implements netdev.Device without a kernel, for hermetic tests
// of code written against package netdev and for showing the effect of each
// seed (the caller's buffer transmitted without a clone, receive copybreak,
// one doorbell per batch) with nothing else in the way.
//
// # Rings
//
// Each Device has a transmit ring, the buffers Xmit queued and the doorbell
// has not yet sent (Batch descriptors), and a receive ring of RingSize
// descriptors (a power of two), each holding an empty buffer from the pool
// with the headroom reserved and RxBufSize bytes of room after it, posted for
// the peer's doorbell to fill as a NIC's DMA engine would:
//
//	A (one goroutine)                            B (another, or the same)
//
//	Xmit(b, more=true) ───► A's tx ring [b1 b2 b3 ..]   (Batch slots, A only)
//	Xmit(b, more=false) ─┐
//	Flush, ring full,    ├► doorbell: spin DoorbellCost, then for each bi
//	error path ──────────┘  copy bi into B's next posted buffer and free bi
//	                        (the completion; no clone); publish fill once
//	                                      │
//	                                      ▼
//	B's rx ring (RingSize slots): | filled | filled | posted | posted | free |
//	                               ▲poll             ▲fill             ▲post
//	                                        Poll(budget, h): [poll, fill) to h,
//	                                        a fresh buffer posted at post
//
// Who writes each index of B's receive ring (slot = index & (RingSize-1);
// the indices run free and only grow):
//
//	index  written by                     read by                         slots it ends
//	post   B's Poll, once per call        A's doorbell (atomic load)      [fill, post): posted, empty
//	fill   A's doorbell, once per batch   B's Poll and Wait (atomic load) [poll, fill): filled by A
//	poll   B's Poll                       B only                          next to hand to the handler
//
// The ring is single-producer single-consumer in each direction of
// ownership: B produces posted slots and consumes filled ones, A's doorbell
// consumes posted slots and produces filled ones. Each side writes the slots
// it owns and then publishes its index with an atomic store; the other side
// loads the index before touching the slots (release and acquire; Go's
// atomics are sequentially consistent, which includes both). A's transmit
// ring is used by A's goroutine alone and needs no atomics.
//
// # Counters and drops
//
// The doorbell counts tx_doorbells once however many packets it sends (a
// Flush with nothing queued counts none) and tx_packets and tx_bytes for all
// of them. A packet that finds no posted buffer at the peer is dropped and
// counted in the peer's rx_dropped_nobuf: the ring is lossy only when the
// receiver falls RingSize packets behind. Poll drops a packet (also
// rx_dropped_nobuf) when the pool has no buffer to repost in its place, and
// reposts the packet's own buffer, so that the ring never runs dry.
//
// # Concurrency
//
// Each device belongs to one goroutine, as package netdev says; the two may
// belong to two goroutines, or to one (a benchmark, a test). Wait sleeps on
// a channel that the peer's doorbell signals when it fills the ring while
// Wait is sleeping; it never spins. Stats and Close may be called from any
// goroutine, and Close wakes a Wait in progress.
//
// # What it is not
//
// memring moves bytes only: metadata (marks, checksum state, GSO fields) does
// not cross the ring, a CHECKSUM_PARTIAL packet is not completed (there is no
// checksum or segmentation offload) and the copy a NIC's DMA engine would do
// costs the sender's CPU here. It has no link layer: a packet is whatever
// bytes the caller transmits, up to RxBufSize.
package memring
