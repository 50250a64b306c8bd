package netdev

import (
	"fmt"
	"strconv"
	"strings"
)

// DropReason says why a packet was dropped, as the kernel's
// enum skb_drop_reason does; Stats counts drops per reason.
type DropReason uint8

const (
	// DropNoBuffer: no buffer was available (the pool was exhausted).
	DropNoBuffer DropReason = iota
	// DropMalformed: a received packet's headers did not parse, or a length
	// field did not fit the bytes present.
	DropMalformed
	// DropTruncated: the packet was longer than the receive buffer
	// (MSG_TRUNC, or a snap length shorter than the wire length).
	DropTruncated
	// DropKernel: the kernel dropped it before the driver saw it (socket
	// receive queue overflow reported by SO_RXQ_OVFL, ring drops reported by
	// PACKET_STATISTICS).
	DropKernel
	// DropRingFull: the transmit ring stayed full after the doorbell.
	DropRingFull
	// DropTooBig: larger than the device can carry (EMSGSIZE, MTU).
	DropTooBig
	// DropError: a system call failed for the packet (the errno is returned
	// to the caller of the call that failed).
	DropError
	// DropClosed: the device was closed with the packet still queued or
	// posted.
	DropClosed
	// NumDropReasons is the number of reasons.
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"nobuf", "malformed", "truncated", "kernel", "ring_full", "too_big", "error", "closed"}

// String returns the reason's short name, as used in the per-reason counter
// names (rx_dropped_<name>, tx_dropped_<name>).
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return fmt.Sprintf("DropReason(%d)", uint8(r))
}

// FallbackReason says why an offload (UDP GSO or GRO, vnet_hdr) was turned off
// for a socket; Stats counts each.
type FallbackReason uint8

const (
	// FallbackUnsupported: the kernel refused the option at open.
	FallbackUnsupported FallbackReason = iota
	// FallbackEIO: a send with the offload failed with EIO (the device or
	// route cannot segment).
	FallbackEIO
	// FallbackEINVAL: a send with the offload failed with EINVAL.
	FallbackEINVAL
	// FallbackEMSGSIZE: a send with the offload failed with EMSGSIZE.
	FallbackEMSGSIZE
	// NumFallbackReasons is the number of reasons.
	NumFallbackReasons
)

var fallbackNames = [NumFallbackReasons]string{"unsupported", "eio", "einval", "emsgsize"}

// String returns the reason's short name, as used in gso_fallback_<name>.
func (r FallbackReason) String() string {
	if r < NumFallbackReasons {
		return fallbackNames[r]
	}
	return fmt.Sprintf("FallbackReason(%d)", uint8(r))
}

// Stats is a snapshot of a device's counters. Field names follow ethtool -S
// (see Each for the exact names). Packets and bytes count what the device
// moved: bytes are packet lengths (skb Len) without any virtio or socket
// header. A GSO super-packet counts as its segments in packets; a drop
// counts what was dropped as the driver or the kernel saw it, so a
// super-packet dropped whole (rx_dropped_kernel when the socket's queue
// was full, say) counts once there, and rx_copybreak counts buffers.
type Stats struct {
	RxPackets   uint64                 // rx_packets: handed to Poll's handler
	RxBytes     uint64                 // rx_bytes
	RxCopybreak uint64                 // rx_copybreak: delivered as a copybreak copy
	RxTruncated uint64                 // rx_truncated: longer than the receive buffer (also in rx_dropped)
	RxDropped   [NumDropReasons]uint64 // rx_dropped_<reason>

	TxPackets   uint64                 // tx_packets: handed to the device by a doorbell that succeeded
	TxBytes     uint64                 // tx_bytes
	TxDoorbells uint64                 // tx_doorbells: system calls or ring kicks that made the device send
	TxRingFull  uint64                 // tx_ring_full: Xmits that found the ring full and rang the doorbell (tx_dropped_ring_full: those that then dropped)
	TxDropped   [NumDropReasons]uint64 // tx_dropped_<reason>

	GSOFallback [NumFallbackReasons]uint64 // gso_fallback_<reason>
}

// RxDroppedTotal returns rx_dropped, the sum over reasons.
func (s Stats) RxDroppedTotal() uint64 { return sum(s.RxDropped[:]) }

// TxDroppedTotal returns tx_dropped, the sum over reasons.
func (s Stats) TxDroppedTotal() uint64 { return sum(s.TxDropped[:]) }

// GSOFallbackTotal returns gso_fallback, the sum over reasons.
func (s Stats) GSOFallbackTotal() uint64 { return sum(s.GSOFallback[:]) }

func sum(v []uint64) uint64 {
	var t uint64
	for _, x := range v {
		t += x
	}
	return t
}

// Each calls fn with every counter's ethtool -S style name and value, in a
// fixed order: the totals first, then the per-reason counters that are not
// zero.
func (s Stats) Each(fn func(name string, v uint64)) {
	fn("rx_packets", s.RxPackets)
	fn("rx_bytes", s.RxBytes)
	fn("rx_dropped", s.RxDroppedTotal())
	fn("rx_copybreak", s.RxCopybreak)
	fn("rx_truncated", s.RxTruncated)
	fn("tx_packets", s.TxPackets)
	fn("tx_bytes", s.TxBytes)
	fn("tx_doorbells", s.TxDoorbells)
	fn("tx_dropped", s.TxDroppedTotal())
	fn("tx_ring_full", s.TxRingFull)
	fn("gso_fallback", s.GSOFallbackTotal())
	for r, v := range s.RxDropped {
		if v != 0 {
			fn("rx_dropped_"+DropReason(r).String(), v)
		}
	}
	for r, v := range s.TxDropped {
		if v != 0 {
			fn("tx_dropped_"+DropReason(r).String(), v)
		}
	}
	for r, v := range s.GSOFallback {
		if v != 0 {
			fn("gso_fallback_"+FallbackReason(r).String(), v)
		}
	}
}

// Map returns the counters by name, as Each lists them.
func (s Stats) Map() map[string]uint64 {
	m := make(map[string]uint64)
	s.Each(func(name string, v uint64) { m[name] = v })
	return m
}

// String returns the counters that are not zero as ethtool -S names them,
// "name=value" pairs separated by spaces in Each's order (for example
// "rx_packets=5 rx_bytes=320 tx_packets=5 tx_bytes=320 tx_doorbells=1"),
// or "0" when every counter is zero, for logs and fmt's %v.
func (s Stats) String() string {
	var b strings.Builder
	s.Each(func(name string, v uint64) {
		if v == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(v, 10))
	})
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

// Sub returns the counters that grew from prev to s, for per-interval rates.
func (s Stats) Sub(prev Stats) Stats {
	d := s
	d.RxPackets -= prev.RxPackets
	d.RxBytes -= prev.RxBytes
	d.RxCopybreak -= prev.RxCopybreak
	d.RxTruncated -= prev.RxTruncated
	d.TxPackets -= prev.TxPackets
	d.TxBytes -= prev.TxBytes
	d.TxDoorbells -= prev.TxDoorbells
	d.TxRingFull -= prev.TxRingFull
	for i := range d.RxDropped {
		d.RxDropped[i] -= prev.RxDropped[i]
		d.TxDropped[i] -= prev.TxDropped[i]
	}
	for i := range d.GSOFallback {
		d.GSOFallback[i] -= prev.GSOFallback[i]
	}
	return d
}

// Counters is the live form of Stats that drivers embed and update on their
// goroutine: plain increments, no locked instructions, and a Snapshot that
// other goroutines may call at any time (word-sized loads; atomic under the
// race detector, see counter.go). Only one goroutine may update it.
type Counters struct {
	s Stats
}

// Snapshot returns the current counters. Safe for concurrent use.
func (c *Counters) Snapshot() Stats { return c.snapshot() }

// RxPacket counts one received packet of n bytes, delivered to the handler.
func (c *Counters) RxPacket(n int) {
	add(&c.s.RxPackets, 1)
	add(&c.s.RxBytes, uint64(n))
}

// RxSuper counts a GSO super-packet of segs segments (1 or more) and n
// bytes, delivered to the handler as one buffer: segs packets in
// rx_packets, as the Stats doc counts a super-packet, and n bytes.
func (c *Counters) RxSuper(segs, n int) {
	add(&c.s.RxPackets, uint64(max(segs, 1)))
	add(&c.s.RxBytes, uint64(n))
}

// RxCopybreak counts one packet delivered as a copybreak copy.
func (c *Counters) RxCopybreak() { add(&c.s.RxCopybreak, 1) }

// RxDrop counts n received packets dropped for reason r; DropTruncated also
// counts in rx_truncated. It panics on a reason past NumDropReasons.
func (c *Counters) RxDrop(r DropReason, n int) {
	checkReason(r)
	add(&c.s.RxDropped[r], uint64(n))
	if r == DropTruncated {
		add(&c.s.RxTruncated, uint64(n))
	}
}

// TxDoorbell counts one doorbell that sent packets packets of bytes bytes.
func (c *Counters) TxDoorbell(packets, bytes int) {
	add(&c.s.TxDoorbells, 1)
	add(&c.s.TxPackets, uint64(packets))
	add(&c.s.TxBytes, uint64(bytes))
}

// TxSent counts packets of bytes bytes sent without a doorbell of their own
// (the rest of a batch completed by a later call).
func (c *Counters) TxSent(packets, bytes int) {
	add(&c.s.TxPackets, uint64(packets))
	add(&c.s.TxBytes, uint64(bytes))
}

// TxRingFull counts one Xmit that found the ring full.
func (c *Counters) TxRingFull() { add(&c.s.TxRingFull, 1) }

// TxDrop counts n transmitted packets dropped for reason r. It panics on a
// reason past NumDropReasons.
func (c *Counters) TxDrop(r DropReason, n int) {
	checkReason(r)
	add(&c.s.TxDropped[r], uint64(n))
}

// GSOFallback counts one offload turned off for reason r. It panics on a
// reason past NumFallbackReasons.
func (c *Counters) GSOFallback(r FallbackReason) {
	if uint(r) >= uint(len(c.s.GSOFallback)) {
		panic(fmt.Sprintf("netdev: GSOFallback(%d): no such reason (NumFallbackReasons %d)", int(r), len(c.s.GSOFallback)))
	}
	add(&c.s.GSOFallback[r], 1)
}

// checkReason panics on a drop reason the counters have no slot for: a
// driver's mistake, named, rather than an index out of range.
func checkReason(r DropReason) {
	if uint(r) >= uint(NumDropReasons) {
		panic(fmt.Sprintf("netdev: drop reason %d: no such reason (NumDropReasons %d)", int(r), NumDropReasons))
	}
}
