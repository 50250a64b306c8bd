package skb

import (
	"fmt"
	"math"
	"sync/atomic"
)

// DefaultHeadroom is the headroom, in bytes, that allocators reserve in front of
// the data of a new buffer unless told otherwise: room to push an Ethernet,
// VLAN, IP and UDP or tunnel header without reallocating. The kernel reserves
// NET_SKB_PAD (64) plus NET_IP_ALIGN; skb reserves more because encapsulation
// (VPNs and tunnels) is the common case for its users.
const DefaultHeadroom = 128

// CsumState is the checksum state of a buffer, the kernel's ip_summed
// (include/linux/skbuff.h, "DOC: skb checksums").
type CsumState uint8

const (
	// ChecksumNone: nothing is known; on receive the stack must verify, on
	// transmit the checksum is already in the packet.
	ChecksumNone CsumState = iota
	// ChecksumUnnecessary: on receive the device verified the checksum.
	ChecksumUnnecessary
	// ChecksumComplete: on receive, Csum holds the ones' complement sum of the
	// packet from the start of the data (after the mac header was pulled, the
	// sum of what remains).
	ChecksumComplete
	// ChecksumPartial: on transmit the checksum must still be computed over the
	// bytes from CsumStart to the end and stored at CsumStart+CsumOffset; the
	// pseudo-header sum is already in that field.
	ChecksumPartial
)

// String returns the kernel's name of the state, such as "CHECKSUM_PARTIAL".
func (s CsumState) String() string {
	switch s {
	case ChecksumNone:
		return "CHECKSUM_NONE"
	case ChecksumUnnecessary:
		return "CHECKSUM_UNNECESSARY"
	case ChecksumComplete:
		return "CHECKSUM_COMPLETE"
	case ChecksumPartial:
		return "CHECKSUM_PARTIAL"
	}
	return fmt.Sprintf("CsumState(%d)", uint8(s))
}

// GSOType says what kind of segmentation a GSO buffer needs (gso_type). The bit
// values are skb's own; drivers translate them to their wire format (for
// example virtio_net_hdr's gso_type).
type GSOType uint32

const (
	// GSOTCPv4 is TCP over IPv4 (SKB_GSO_TCPV4).
	GSOTCPv4 GSOType = 1 << iota
	// GSODodgy marks a GSO header from an untrusted source (SKB_GSO_DODGY).
	GSODodgy
	// GSOTCPECN: the segments carry ECN's CWR bit (SKB_GSO_TCP_ECN).
	GSOTCPECN
	// GSOTCPFixedID: all segments keep the IPv4 ID (SKB_GSO_TCP_FIXEDID).
	GSOTCPFixedID
	// GSOTCPv6 is TCP over IPv6 (SKB_GSO_TCPV6).
	GSOTCPv6
	// GSOUDPL4 is UDP segmentation: one datagram per gso_size (SKB_GSO_UDP_L4,
	// the UDP_SEGMENT socket option).
	GSOUDPL4
	// GSOFragList: the segments are the frag list members (SKB_GSO_FRAGLIST).
	GSOFragList
)

// Recycler takes back the memory of freed buffers. Allocators (package pool)
// implement it; users do not call it. Each method is called once per object.
type Recycler interface {
	// RecycleBuff receives a buffer header no longer in use.
	RecycleBuff(b *Buff)
	// RecycleShared receives a data block whose last reference was dropped; its
	// frags, frag list and destructor have already been released.
	RecycleShared(s *Shared)
}

// Allocator hands out buffer headers and data blocks for the operations that
// need new memory (Clone, Copy, PskbCopy, Unshare, CowHead, ExpandHead,
// Linearize) and takes back what they free. *pool.Cache (one goroutine) and
// *pool.Pool (any goroutine) implement it.
type Allocator interface {
	Recycler
	// AllocBuff returns an unused buffer header, not attached to data. The
	// caller owns it and must Build or clone into it, or recycle it.
	AllocBuff() (*Buff, error)
	// AllocShared returns a data block of at least size bytes with dataref 1
	// and cleared shared info. It returns ErrTooBig when no block is that large,
	// or the allocator's exhaustion error.
	AllocShared(size int) (*Shared, error)
}

// Shared is a data block and its shared info (skb_shared_info): the memory a
// buffer's head, data and tail point into, the page fragments and frag list
// that follow the linear data, the GSO parameters, and dataref, the number of
// Buffs sharing all of it.
//
// The fields in hot are cleared in one store when the block is handed out
// (seed 003, __alloc_skb: everything before dataref); the frag list and
// destructor are already nil then, and dataref is set to 1 after them. The
// frags array comes last: only the first nr_frags entries are ever read.
type Shared struct {
	hot        sharedHot
	class      uint8 // read with hot when a buffer is freed: keep them in one cache line
	home       Recycler
	fragList   *Buff
	destructor func(*Buff)
	dataref    int32 // atomic, except in Reset where the block is not yet shared
	// addr sits beside dataref, in the cache line Reset writes: a driver
	// posting a fresh buffer to a fill ring reads it (HeadAddr) right after
	// the allocation, and in the next line it was a cache miss per frame
	// (most of the AF_XDP receiver's refill time).
	addr  uint64
	mem   []byte
	frags [MaxFrags]Frag
	_     [sharedPad]byte
}

// sharedPad pads a Shared to six whole cache lines (384 bytes), so that in
// the pool's page-aligned slabs every block's first line, which holds all
// that allocating, freeing and posting a plain buffer reads and writes (hot,
// class, home, dataref, addr), is one line of its own.
const sharedPad = 24

type sharedHot struct {
	nrFrags uint8
	gsoSize uint16
	gsoSegs uint16
	gsoType GSOType
}

// InitShared sets s up over mem, the data block it describes for its whole
// life; addr is mem's offset in its arena, home is where s goes back when its
// last reference is dropped outside an Allocator, and class is the allocator's
// own tag for it (its size class). For allocators only.
func (s *Shared) InitShared(mem []byte, addr uint64, home Recycler, class uint8) {
	s.mem = mem[:len(mem):len(mem)]
	s.addr = addr
	s.home = home
	s.class = class
	atomic.StoreInt32(&s.dataref, 0)
}

// Class returns the allocator's tag given to InitShared.
func (s *Shared) Class() int { return int(s.class) }

// Home returns the recycler given to InitShared.
func (s *Shared) Home() Recycler { return s.home }

// Reset clears the shared info in one store of the fields before dataref and
// sets dataref to 1, as __alloc_skb does. For allocators, as they hand s out:
// s must not be reachable by any other goroutine. (The frag list and
// destructor are already nil: releasing a block clears them.)
func (s *Shared) Reset() {
	s.hot = sharedHot{}
	s.dataref = 1
}

// Size returns the block's size in bytes.
func (s *Shared) Size() int { return len(s.mem) }

// Addr returns the offset of the block's first byte in its arena.
func (s *Shared) Addr() uint64 { return s.addr }

// Bytes returns the whole block. For allocators: it aliases data that buffers
// may be using.
func (s *Shared) Bytes() []byte { return s.mem }

// Dataref returns the number of buffers sharing s.
func (s *Shared) Dataref() int { return int(atomic.LoadInt32(&s.dataref)) }

// Buff states, for double-free detection.
const (
	stateFree      uint8 = iota
	stateLive            // allocated, never cloned, plain linear data in a block of its own allocator: Release is a store
	stateLiveExtra       // allocated, never cloned, may hold frags, a frag list or a destructor, or a block of another allocator
	stateCloned          // allocated and cloned (skb->cloned): dataref is atomic
	stateDying           // the last user of its data, inside the data's destructor: readable, not to be freed or cloned
)

// Buff is a socket buffer: a view of a data block through head, data, tail and
// end, plus the packet's metadata. See the package documentation for the
// geometry. The zero Buff is not usable: buffers come from an allocator (package
// pool), which owns the header's memory.
//
// Fields in meta are cleared in one store at allocation (seed 003).
//
// Layout: a header is three whole 64-byte cache lines (192 bytes), and the
// pool's slabs of headers are page-aligned, so each header owns its lines.
// The first holds what every allocation, free and data access reads (head,
// data, tail, end, state, the block's class, shinfo, home); the second the metadata cleared at
// allocation and the frag-list link; the third the control buffer, which
// only protocols that use it touch. A receive path thus touches two lines
// per header (an AF_XDP receiver cycling through thousands of posted
// frames takes each as a cache miss).
type Buff struct {
	head  []byte
	data  uint32
	tail  uint32
	end   uint32
	state uint8
	class uint8 // shinfo.class, kept here so that a fast free reads no line of the shared info
	// shClean says that shinfo is as Reuse leaves it (GSO fields and frag
	// count zero, dataref 1, no frag list or destructor), so that Reuse
	// need not write its line again: set by Reuse, cleared by every change
	// to the shared info made through this header, by a slow free and by
	// pairing with another block.
	shClean bool
	shinfo  *Shared
	home    Recycler
	m       meta
	next    *Buff
	cb      [CBSize]byte
	_       [buffPad]byte
}

// buffPad pads a Buff to three cache lines.
const buffPad = 16

// meta is everything cleared when a buffer is built; it holds no pointers, so
// the clear is a plain memory clear. Header offsets are stored plus one from
// head so that zero means unset.
type meta struct {
	len          uint32
	dataLen      uint32
	macHeader    uint32
	netHeader    uint32
	transHeader  uint32
	csumStart    uint32
	csum         uint32
	priority     uint32
	mark         uint32
	hash         uint32
	tstamp       int64
	csumOffset   uint16
	protocol     uint16
	queueMapping uint16
	ipSummed     CsumState
	l4Hash       bool
}

// InitBuff sets up a buffer header for its whole life; home is where it goes
// back when freed outside an Allocator. For allocators only.
func (b *Buff) InitBuff(home Recycler) {
	b.home = home
	b.state = stateFree
}

// Build attaches b to the fresh data block s (dataref 1, from Reset) with
// headroom bytes reserved and no data, clearing all metadata (build_skb). For
// allocators only: it panics if headroom does not fit in s or b is in use.
func (b *Buff) Build(s *Shared, headroom int) {
	b.Attach(s)
	b.Reuse(headroom)
}

// Attach pairs the free header b with the free data block s, so that an
// allocator can keep them together and hand both out with Reuse; both must be
// the same allocator's. For allocators only: it panics if b is in use.
func (b *Buff) Attach(s *Shared) {
	if b.state != stateFree {
		panic("skb: attach to a buffer in use")
	}
	b.head = s.mem
	b.end = uint32(len(s.mem))
	b.setShared(s)
}

// setShared points b at the shared info s, and keeps s's class beside it.
func (b *Buff) setShared(s *Shared) {
	b.shinfo = s
	b.class = s.class
	b.shClean = false
}

// Detach returns the data block paired with the free header b. For allocators
// only: the block stays the allocator's, as the header does.
func (b *Buff) Detach() *Shared { return b.shinfo }

// Reuse makes the free header b live again over the data block it is paired
// with: one clear of the metadata and of the shared info before dataref,
// dataref set to 1, headroom bytes reserved and no data (seed 003: __alloc_skb
// and skb_recycle). Packet data is not zeroed. For allocators only: it panics
// if b is in use or headroom does not fit.
//
// A buffer last freed by the fast path (ReleasePlain) whose shared info
// nothing changed since its last Reuse still has it cleared: Reuse then
// leaves that cache line alone, which spares a receive ring cycling
// through thousands of buffers a store miss per packet.
func (b *Buff) Reuse(headroom int) {
	if b.state != stateFree || uint(headroom) > uint(b.end) {
		panic(misuse{b, opReuse, headroom, 0})
	}
	if !b.shClean {
		s := b.shinfo
		s.hot = sharedHot{}
		s.dataref = 1
		b.shClean = true
	}
	b.m = meta{}
	b.data = uint32(headroom)
	b.tail = uint32(headroom)
	b.state = stateLive
}

// Len returns the packet's length in bytes: the linear data plus the paged part.
func (b *Buff) Len() int {
	b.checkLive()
	return int(b.m.len)
}

// DataLen returns the length of the paged part (frags and frag list) in bytes.
func (b *Buff) DataLen() int {
	b.checkLive()
	return int(b.m.dataLen)
}

// HeadLen returns the length of the linear data in bytes (skb_headlen).
func (b *Buff) HeadLen() int {
	b.checkLive()
	return int(b.tail - b.data)
}

// Headroom returns the free bytes between head and data (skb_headroom).
func (b *Buff) Headroom() int {
	b.checkLive()
	return int(b.data)
}

// Tailroom returns the free bytes between tail and end; zero for a nonlinear
// buffer, where Put is not allowed (skb_tailroom).
func (b *Buff) Tailroom() int {
	b.checkLive()
	if b.m.dataLen != 0 {
		return 0
	}
	return int(b.end - b.tail)
}

// End returns the size of the data block in bytes (skb_end_offset).
func (b *Buff) End() int {
	b.checkLive()
	return int(b.end)
}

// IsNonlinear reports whether b has a paged part (skb_is_nonlinear).
func (b *Buff) IsNonlinear() bool {
	b.checkLive()
	return b.m.dataLen != 0
}

// Cloned reports whether b's data is shared with another buffer (skb_cloned).
// A cloned buffer must not be written: call Unshare or CowHead first.
func (b *Buff) Cloned() bool {
	b.checkLive()
	return b.state == stateCloned && atomic.LoadInt32(&b.shinfo.dataref) != 1
}

// Dataref returns the number of buffers sharing b's data block.
func (b *Buff) Dataref() int {
	b.checkLive()
	return int(atomic.LoadInt32(&b.shinfo.dataref))
}

// HeadAddr returns the offset of b's head in the allocator's arena: the
// address an AF_XDP UMEM or DMA engine knows the block by. The data starts at
// HeadAddr()+Headroom().
func (b *Buff) HeadAddr() uint64 {
	b.checkLive()
	return b.shinfo.addr
}

// Data returns the linear data, from data to tail. The returned slice aliases b
// and is valid until b is changed, unshared or freed; it must not be written
// while b is Cloned.
func (b *Buff) Data() []byte {
	b.checkLive()
	return b.head[b.data:b.tail:b.tail]
}

// Head returns the whole data block, from head to end, for code that lays out
// headroom itself (drivers receiving into a block). The returned slice aliases
// b and is valid until b is changed, unshared or freed. While b is Cloned the
// block is shared, and its bytes outside b's data may be other buffers'
// data (a clone of one segment of a GRO train has the segments before it as
// its headroom): it must not be written then, before CowHead or Unshare.
func (b *Buff) Head() []byte {
	b.checkLive()
	return b.head
}

// Next returns the buffer after b in a frag list, or nil. The returned buffer
// belongs to the shared info of the buffer whose frag list it is in: the
// caller must not free or change it.
func (b *Buff) Next() *Buff {
	b.checkLive()
	return b.next
}

// Reserve moves data and tail n bytes forward on an empty buffer, making n
// more bytes of headroom (skb_reserve); a negative n gives headroom back, as
// skb_reserve(skb, -len) does. It panics if b holds data or the new data
// offset falls outside the block.
func (b *Buff) Reserve(n int) {
	b.checkLive()
	if b.m.len != 0 || n < -int(b.data) || n > int(b.end-b.data) {
		panic(misuse{b, opReserve, n, 0})
	}
	d := uint32(int(b.data) + n)
	b.data = d
	b.tail = d
}

// CBSize is the size of a buffer's control block, in bytes (the kernel's
// skb->cb[48]).
const CBSize = 48

// CB returns the buffer's control block: scratch space for whichever layer
// owns the buffer now (a driver keeps a packet's source address there, a
// tunnel its peer), as skb->cb is. It is not cleared at allocation; Clone and
// the copies copy it. The returned array is part of b and is valid until b is
// freed.
func (b *Buff) CB() *[CBSize]byte {
	b.checkLive()
	return &b.cb
}

// Put extends the linear data by n bytes at the tail and returns them
// (skb_put). The returned slice aliases b and is valid until b is changed,
// unshared or freed; its contents are whatever the block held. Put panics,
// like skb_over_panic, if n exceeds the tailroom, and also if b is nonlinear or
// its data is shared.
func (b *Buff) Put(n int) []byte {
	b.checkLive()
	t := b.tail
	if uint(n) > uint(b.end-t) || b.m.dataLen != 0 || b.state == stateCloned && b.sharedNow() {
		panic(misuse{b, opPut, n, atomic.LoadInt32(&b.shinfo.dataref)})
	}
	b.tail = t + uint32(n)
	b.m.len += uint32(n)
	return b.head[t:b.tail:b.tail]
}

// Push extends the linear data by n bytes at the front, into the headroom, and
// returns them (skb_push). The returned slice aliases b and is valid until b
// is changed, unshared or freed. Push panics, like skb_under_panic, if n
// exceeds the headroom, and also if b's data is shared.
func (b *Buff) Push(n int) []byte {
	b.checkLive()
	d := b.data
	// n past the headroom, or past the room left in the 32-bit length
	// (^len): one compare, which keeps Push inlined.
	if uint(n) > uint(min(d, ^b.m.len)) || b.state == stateCloned && b.sharedNow() {
		panic(misuse{b, opPush, n, atomic.LoadInt32(&b.shinfo.dataref)})
	}
	d -= uint32(n)
	b.data = d
	b.m.len += uint32(n)
	return b.head[d : d+uint32(n) : d+uint32(n)]
}

// Pull removes n bytes from the front of the linear data and returns them
// (skb_pull; the kernel returns the new data pointer, skb returns the removed
// header, which is what a parser wants). The returned slice aliases b and is
// valid until b is changed, unshared or freed. Pull panics if n exceeds the
// linear data; PskbMayPull first moves paged bytes into the linear data.
func (b *Buff) Pull(n int) []byte {
	b.checkLive()
	d := b.data
	if uint(n) > uint(b.tail-d) {
		panic(misuse{b, opPull, n, 0})
	}
	b.data = d + uint32(n)
	b.m.len -= uint32(n)
	return b.head[d : d+uint32(n) : d+uint32(n)]
}

// Trim cuts a linear buffer down to n bytes (skb_trim); it does nothing when b
// is not longer than n. It panics if n is negative or b is nonlinear and would
// lose paged data: use PskbTrim for those.
func (b *Buff) Trim(n int) {
	b.checkLive()
	if n < 0 || uint(n) < uint(b.m.len) && b.m.dataLen != 0 {
		panic(misuse{b, opTrim, n, 0})
	}
	if uint(n) >= uint(b.m.len) {
		return
	}
	b.tail = b.data + uint32(n)
	b.m.len = uint32(n)
}

// markExtra records that b's shared info may hold frags, a frag list or a
// destructor, or that its block belongs to another allocator than its header,
// so that releasing it takes the slow path.
func (b *Buff) markExtra() {
	b.shClean = false
	if b.state == stateLive {
		b.state = stateLiveExtra
	}
}

// sharedNow reports whether b's data is shared right now; called only when
// b is in stateCloned.
func (b *Buff) sharedNow() bool { return atomic.LoadInt32(&b.shinfo.dataref) != 1 }

// Operations named in misuse panics.
const (
	opPut uint8 = iota
	opPush
	opPull
	opTrim
	opReserve
	opReuse
)

var opNames = [...]string{"put", "push", "pull", "trim", "reserve", "reuse"}

// misuse is the panic value for programmer misuse of a buffer: an operation
// past the headroom or the end, on shared data, or on a nonlinear buffer where
// only a linear one will do. It is an error whose message names the operation
// and the offsets, as skb_over_panic and skb_under_panic print them. It is
// small so that the fast paths that panic with it stay inlinable; the message
// is formatted when printed, from the buffer as it is then (unchanged, unless
// the panic was recovered and the buffer changed since).
type misuse struct {
	b   *Buff
	op  uint8
	n   int
	ref int32 // dataref at the time of the panic (put and push), else 0
}

func (m misuse) Error() string {
	b, n := m.b, m.n
	why := "past the end"
	switch {
	case n < 0 && m.op != opReserve:
		why = "is negative"
	case m.op == opPush && uint(n) > uint(b.data):
		why = "past the headroom"
	case m.op == opPush && uint64(b.m.len)+uint64(n) > math.MaxUint32:
		why = fmt.Sprintf("past the largest packet (%d bytes, 4 GiB - 1)", uint32(math.MaxUint32))
	case m.op == opReserve && b.m.len != 0:
		why = "on a buffer holding data"
	case m.op == opReserve && n < -int(b.data):
		why = "past the headroom"
	case m.op == opReuse && b.state != stateFree:
		why = "on a buffer in use"
	case m.op == opPut && uint64(b.tail)+uint64(n) > uint64(b.end):
	case m.op == opPull && b.m.dataLen != 0 && n <= int(b.m.len):
		why = fmt.Sprintf("past the linear data (%d bytes; PskbMayPull first)", b.tail-b.data)
	case m.op == opPull:
		why = "past the data"
	case (m.op == opPut || m.op == opTrim) && b.m.dataLen != 0:
		why = "on a nonlinear buffer (use PskbTrim or Linearize)"
	case (m.op == opPut || m.op == opPush) && m.ref > 1:
		why = fmt.Sprintf("on data shared by %d buffers (call Unshare or CowHead first)", m.ref)
	}
	return fmt.Sprintf("skb: %s %d %s: %s", opNames[m.op], n, why, b.geometry())
}

func (b *Buff) geometry() string {
	return fmt.Sprintf("head 0 data %d tail %d end %d len %d data_len %d",
		b.data, b.tail, b.end, b.m.len, b.m.dataLen)
}

// writableShinfo panics unless b may change its shared info (frags, frag list,
// GSO fields).
func (b *Buff) writableShinfo(op string) {
	if b.state == stateCloned {
		if r := atomic.LoadInt32(&b.shinfo.dataref); r != 1 {
			panic(fmt.Sprintf("skb: %s on data shared by %d buffers (call Unshare or CowHead first): %s", op, r, b.geometry()))
		}
	}
}

// Home returns the recycler given to InitBuff.
func (b *Buff) Home() Recycler { return b.home }

// hasExtra reports whether s holds anything beyond linear data to release.
func (s *Shared) hasExtra() bool {
	return s.hot.nrFrags != 0 || s.fragList != nil || s.destructor != nil
}

// DataHome returns the recycler of b's data block: the pool its memory
// belongs to. Drivers use it to tell a buffer in their own arena (an AF_XDP
// UMEM) from one they must copy.
func (b *Buff) DataHome() Recycler {
	b.checkLive()
	return b.shinfo.home
}
