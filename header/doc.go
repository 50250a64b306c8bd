// Package header reads and writes packet headers in place, and computes the
// Internet checksum.
//
// # Views
//
// Each header is a view: a named []byte (Ethernet, VLAN, ARP, IPv4, IPv6,
// IPv6Fragment, IPv6Options for Hop-by-Hop and Destination Options,
// IPv6Routing, UDP, TCP, ICMPv4, ICMPv6, and NDP for Neighbor Discovery)
// whose methods read and write the
// fields at their offsets, big-endian, without copying. A ParseX function
// checks every length field against the bytes present and returns the view,
// trimmed to the header's own length field where it has one; after that the
// view's methods are safe to call. Called on bytes no parser checked, they
// panic with an index out of range when the slice is too short, like any
// slice access. Each view has an Encode method that writes a whole header
// from an XFields struct into a slice the caller provides, and setters for
// single fields. OptionIterator walks IPv4 and TCP options, and
// IPv6OptionIterator the options of IPv6Options, NDPOptionIterator those of
// an NDP message. Views alias the bytes they were made from: a view of a
// buffer is valid until that buffer is changed, unshared or freed.
//
// ParseFrame and ParsePacket walk a frame (Ethernet, VLAN tags, ARP or IP,
// IPv6 extension headers, UDP/TCP/ICMP) and return the offsets a driver
// stores in a buffer: network header, transport header, payload, end.
// ParseFrameBuff and ParsePacketBuff do the same for an skb.Buff whose
// payload may lie in page frags, and mark the offsets in it.
// BuildUDP writes the headers of a UDP frame for a packet generator.
//
// Views and functions keep no state of their own: concurrent use is safe as
// long as nothing writes the bytes being read. Parsing, building and
// checksumming allocate nothing. Errors on bad input
// are preallocated *ParseError values wrapping the sentinels in errors.go,
// so a driver can count drops by reason with errors.Is and no allocation.
// Bytes from the wire never make these functions panic.
//
// # Checksums
//
// Checksum computes the 16-bit ones' complement sum of RFC 1071 eight bytes
// at a time. ChecksumCombine, ChecksumBlockAdd and ChecksumFold chain and
// fold partial sums; PseudoHeaderChecksumIPv4 and PseudoHeaderChecksumIPv6
// sum the pseudo-headers of RFC 768, RFC 9293 and RFC 8200; ChecksumUpdate16,
// ChecksumUpdate32 and ChecksumUpdateBytes apply RFC 1624 incremental
// updates (NAT, TTL decrement), and ChecksumUpdateAddr one to a UDP or TCP
// checksum for an address of its pseudo-header, with UDP's rules for zero;
// FinishChecksum completes a CHECKSUM_PARTIAL
// packet from csum_start and csum_offset as the kernel's skb_checksum_help
// does. ChecksumBuff and FinishChecksumBuff do the same over an skb.Buff,
// page frags and frag list included (the kernel's skb_checksum and
// skb_checksum_help). Sums are returned folded and not complemented; the
// value stored in a header is the complement, computed by the views'
// ComputeChecksum.
//
// # What it is not
//
// It is not a protocol stack: it does not reassemble fragments, track
// connections, answer ARP or ICMP, or decide what to do with a packet. It
// does not decode application protocols, IPv6 jumbograms (RFC 2675),
// tunnels or IPsec payloads. It owns no buffers (the skb functions read or
// finish a buffer the caller keeps) and makes no system calls; it is pure Go
// and builds on every platform.
package header
