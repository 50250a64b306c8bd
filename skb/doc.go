// Package skb is the socket buffer: a packet's bytes and the metadata that travels
// with them, with the geometry, sharing rules and checksum state of the Linux
// sk_buff (include/linux/skbuff.h).
//
// # Geometry
//
// A Buff views one data block (usually off-heap memory from package pool) through
// four offsets, exactly as the kernel's head, data, tail and end pointers:
//
//	head           data                 tail            end
//	 |<- headroom ->|<--- linear data --->|<- tailroom ->|
//	 +--------------+---------------------+--------------+
//	 |              | mac | net | l4 | .. |              |  + Shared: frags[0..16],
//	 +--------------+---------------------+--------------+    frag list, gso_*, dataref
//
// Reserve moves data and tail together on an empty buffer, Put grows the linear
// data at the tail, Push grows it at the front (into the headroom), Pull removes
// from the front and Trim cuts the end. Len counts the linear data plus the paged
// part (page frags and the frag list); DataLen counts the paged part alone. The
// mac, network and transport header offsets and csum_start are kept relative to
// head, so they survive Push and Pull and are moved with the data by ExpandHead,
// CowHead and the copies.
//
// # Sharing
//
// The data block and its Shared info (skb_shared_info) may be shared by several
// Buffs: Clone makes a new Buff over the same data and raises dataref, the count
// of Buffs sharing it. Nothing may write shared data: Put and Push on a shared
// buffer panic, and a caller that wants to write calls Unshare (private copy of
// everything) or CowHead (private linear head, frags still shared) first. The
// data block goes back to its allocator when the last Buff sharing it is freed;
// the destructor set with SetDestructor runs then, exactly once.
//
// # Ownership
//
// A Buff has one owner at a time. A function that takes ownership says so; the
// owner must Free the buffer or pass it on to a function that takes ownership.
// Slices returned by Data, Put, Push, Pull and the header accessors alias the
// buffer and are valid until it is changed, unshared or freed.
//
// # What it is not
//
// The package makes no system calls and allocates nothing by itself: new memory
// comes from an Allocator (package pool's Cache and Pool are the usual ones).
// Programmer misuse (Push past the headroom, Put past the end, Pull past the
// linear data) panics with the offsets in the message, as skb_under_panic and
// skb_over_panic do. A Buff is not safe for concurrent use; clones of one Buff may
// be used and freed on different goroutines.
package skb
