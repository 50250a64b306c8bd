// Package netdev is the device contract every skb driver implements: transmit
// with one doorbell per batch (Xmit with xmit_more, and Flush), NAPI-style
// receive with a budget and receive copybreak (Poll), and counters named as
// ethtool -S names them (Stats).
//
// # Transmit
//
// Xmit queues one buffer and takes ownership of it, also when it returns an
// error; the driver frees it when the device is done with it, without cloning
// it (seed 000). more is the kernel's xmit_more: the caller has more packets
// coming at once. The doorbell (the system call or ring kick that makes the
// device send what is queued) is rung when more is false, when the ring is
// full, and on every error path, so that a queued packet is never stranded
// (seed 002). Flush rings it now.
//
//	Xmit(b1,true) Xmit(b2,true) ... Xmit(b64,false)  ->  one doorbell
//	Xmit(b,false) Xmit(b,false) ...                  ->  one doorbell each
//
// # Receive
//
// Poll receives up to budget packets without blocking and hands each to the
// handler, which owns it (napi_poll). Wait blocks until Poll has something to
// do. A packet shorter than the copybreak threshold (default 256 bytes) is
// copied into a right-sized buffer (where a smaller block than the receive
// buffer's holds it) and the large receive buffer is reused at once (seed
// 001); receive buffers reserve headroom (default 128 bytes) so
// that a tunnel can push its header without reallocating (seed 004). A
// received buffer that shares its data is the exception: a GRO segment of
// driver/udp at or over the copybreak threshold is a clone of its train,
// and a header is pushed on it after CowHead (a copy) only.
//
// # Concurrency
//
// A Device is one queue and belongs to one goroutine: Xmit, Flush, Poll, Wait
// (BusyPoll, on a BusyPoller) and the device's Cache are used from that
// goroutine only. Stats and Close
// are safe from any goroutine. The drivers do not lock their queues (a lock
// per packet would cost more than the rest of Xmit): two goroutines calling
// Xmit on one device at once corrupt its queue, which shows as a nil
// pointer or a double free far from the cause, and which `go test -race`
// reports as a data race where it happens. Give each goroutine a device
// of its own (a socket, a queue) instead.
//
// # What it is not
//
// netdev moves no packets itself: the drivers under driver/ do. Package
// netdev/netdevtest holds the conformance suite every driver passes.
package netdev
