package pool

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/skbdev/skb/skb"
)

// Class configures one size class.
type Class struct {
	// Size is the size of each data block in bytes: headroom, data and
	// tailroom together. Sizes must be distinct, at least 64, more than the
	// headroom, and at most math.MaxInt32 (a buffer's offsets are 32-bit; less
	// on 32-bit platforms, where an arena of 16 blocks must fit an int).
	Size int
	// Max bounds the number of blocks; 0 lets the class grow arena by arena
	// without bound. A bounded class returns ErrExhausted when all its blocks
	// are in use or sitting in caches; each Cache keeps at most Max/8 of
	// them free (1 at least, CacheSize at most) and hands the rest back to
	// the depot, where the other caches find them. Caches that only free
	// a class (a transmitting device's) can still hold all of it between
	// them when there are more than 8, or with a Max of 1: give such a
	// class room for what they keep.
	Max int
	// ArenaBlocks is how many blocks each arena holds; 0 picks enough for
	// about 256 KiB for the class's first arena and about 2 MiB for the
	// next (at least 16 blocks each; about 2 MiB for the first too with
	// HugePages, which maps whole huge pages). Ignored when Contiguous. An
	// arena (of ArenaBlocks blocks, or Max when Contiguous) must fit an
	// int.
	ArenaBlocks int
	// Contiguous maps all Max blocks as one arena at New, the layout an AF_XDP
	// UMEM needs (see Pool.Arena). It requires Max.
	Contiguous bool
}

// Default size classes, in bytes. The 512-byte class holds a copybreak copy (a
// packet under 256 bytes) behind the default 128-byte headroom; 2048 holds a
// 1514-byte Ethernet frame with the headroom (an AF_XDP frame size too); 69632
// (68 KiB) holds a 64 KiB GSO or GRO train (up to 65535 bytes) with the
// headroom.
const (
	SmallSize = 512
	FrameSize = 2048
	LargeSize = 68 << 10
)

// DefaultClasses returns the default size classes: SmallSize, FrameSize and
// LargeSize, unbounded.
func DefaultClasses() []Class {
	return []Class{{Size: SmallSize}, {Size: FrameSize}, {Size: LargeSize}}
}

// NoHeadroom, as Config.Headroom, makes buffers start at the front of their
// block (Config.Headroom's zero value means skb.DefaultHeadroom).
const NoHeadroom = -1

// DefaultPageSize is the size of the pages the page-frag allocator carves, as
// the kernel's page_frag cache (PAGE_FRAG_CACHE_MAX_SIZE, 32 KiB).
const DefaultPageSize = 32 << 10

// DefaultCacheSize is the number of blocks (and of headers) a Cache holds per
// class before it drains half of them to the depot.
const DefaultCacheSize = 256

// MaxCacheSize is the largest Config.CacheSize: a Cache allocates room for
// that many buffer pointers per class when it is made (8 bytes each), 512
// KiB per class at this bound.
const MaxCacheSize = 1 << 16

// Config configures a Pool. The zero Config is usable: default classes,
// 128 bytes of headroom, no debug mode.
type Config struct {
	// Classes are the size classes, in any order; nil means DefaultClasses.
	Classes []Class
	// Headroom is reserved in front of the data of every buffer Alloc returns,
	// in bytes; 0 means skb.DefaultHeadroom (128) and NoHeadroom means none.
	Headroom int
	// PageSize is the size of the page-frag allocator's pages, in bytes; 0
	// means DefaultPageSize. It must be at least 4096 and at most what a
	// class Size may be. MaxPages bounds their number (0: unbounded).
	PageSize int
	MaxPages int
	// CacheSize is the per-class capacity of each Cache, 2 to MaxCacheSize; 0
	// means DefaultCacheSize (less for a bounded class, see Class.Max). Bulk
	// moves to and from the depot are half of it.
	CacheSize int
	// Populate pre-faults arena memory at mapping time (MAP_POPULATE).
	Populate bool
	// HugePages backs arenas with huge pages (MAP_HUGETLB), falling back to
	// transparent huge pages (MADV_HUGEPAGE; the kernel's
	// transparent_hugepage setting must be madvise or always), for which
	// each arena is mapped as whole huge pages from a huge page boundary;
	// and then base pages.
	HugePages bool
	// Debug records allocation and free sites, detects double frees with both
	// sites named, poisons freed data (blocks, and frag pages once their
	// last reference goes) with 0x6b (SLUB's POISON_FREE), delays header
	// reuse, and enables Outstanding. It slows every operation.
	Debug bool
	// Name appears in leak reports.
	Name string
}

// Pool hands out socket buffers. Its methods are safe for concurrent use; they
// take a lock per call, so hot paths use a Cache per goroutine instead. A Pool
// implements skb.Allocator (for any goroutine) and the recycler interfaces
// that buffers freed with skb's Free come home through.
type Pool struct {
	cfg      Config
	headroom int
	classes  []*class
	pages    pageDepot
	hdrs     hdrDepot
	dbg      *debugState

	closeMu    sync.Mutex   // held through Close
	allocating atomic.Int64 // Pool allocations under way, which Close waits out
	mu         sync.Mutex   // guards caches, closed, arenas of every depot
	caches     []*Cache
	closed     bool
	unmapped   bool                       // Close unmapped the arenas
	shut       atomic.Bool                // closed, for the allocation paths
	retiredCls [maxClasses]sharedCounters // counters of closed caches, folded in
	retiredHdr sharedCounters
	direct     [maxClasses]sharedCounters // allocations and frees made through the Pool itself
	directHdr  sharedCounters
}

// class is one size class: its depot of free blocks and its arenas.
type class struct {
	idx       int
	cfg       Class
	mu        sync.Mutex
	free      []*skb.Buff // free blocks, each paired with a free header
	arenas    []*Arena
	blocks    int
	exhausted atomic.Uint64
}

// New builds a pool. Contiguous classes are mapped now; others map their first
// arena on first use. For a bad Config it returns an error wrapping ErrConfig
// that names the field, its value and the rule it breaks, numbering classes
// by their index in Config.Classes ("pool: new: class 1: size 63: want at
// least 64 bytes"); otherwise it returns the mmap error.
func New(cfg Config) (*Pool, error) {
	if cfg.Classes == nil {
		cfg.Classes = DefaultClasses()
	}
	p := &Pool{cfg: cfg}
	switch {
	case cfg.Headroom == 0:
		p.headroom = skb.DefaultHeadroom
	case cfg.Headroom == NoHeadroom:
		p.headroom = 0
	case cfg.Headroom < 0:
		return nil, configErr("headroom %d: want 0 (the default), NoHeadroom (-1) or more", cfg.Headroom)
	default:
		p.headroom = cfg.Headroom
	}
	if p.cfg.PageSize == 0 {
		p.cfg.PageSize = DefaultPageSize
	}
	if p.cfg.CacheSize == 0 {
		p.cfg.CacheSize = DefaultCacheSize
	}
	switch {
	case p.cfg.PageSize < pageSize:
		return nil, configErr("page size %d: want at least %d bytes (0 for the default, %d)", cfg.PageSize, pageSize, DefaultPageSize)
	case p.cfg.PageSize > maxBlockSize:
		return nil, configErr("page size %d: want at most %d bytes", cfg.PageSize, maxBlockSize)
	case p.cfg.CacheSize < 2 || p.cfg.CacheSize > MaxCacheSize:
		return nil, configErr("cache size %d: want 2 to %d (0 for the default, %d)", cfg.CacheSize, MaxCacheSize, DefaultCacheSize)
	case p.cfg.MaxPages < 0:
		return nil, configErr("max pages %d: want 0 (unbounded) or more", cfg.MaxPages)
	}
	if n := len(cfg.Classes); n == 0 || n > maxClasses {
		return nil, configErr("%d size classes: want 1 to %d", n, maxClasses)
	}
	for i, c := range cfg.Classes {
		if err := p.checkClass(i, c); err != nil {
			return nil, err
		}
	}
	// order holds the indices of the classes in Config.Classes, smallest
	// class first.
	order := make([]int, len(cfg.Classes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cfg.Classes[a].Size, cfg.Classes[b].Size) })
	cls := make([]Class, len(order))
	for k, i := range order {
		cls[k] = cfg.Classes[i]
		if k > 0 && cls[k].Size == cls[k-1].Size {
			return nil, configErr("classes %d and %d: size %d twice: want distinct sizes", order[k-1], i, cls[k].Size)
		}
		p.classes = append(p.classes, &class{idx: k, cfg: cls[k]})
	}
	p.cfg.Classes = cls
	p.pages.init(p)
	p.hdrs.init(p)
	if cfg.Debug {
		p.dbg = newDebugState(p)
	}
	for _, c := range p.classes {
		if c.cfg.Contiguous {
			c.mu.Lock()
			err := p.grow(c)
			c.mu.Unlock()
			if err != nil {
				p.unmapAll()
				return nil, err
			}
		}
	}
	register(p)
	return p, nil
}

// maxClasses bounds the number of size classes (a Cache keeps a fixed array).
const maxClasses = 8

// maxBlockSize bounds a class's block size and the page size, in bytes: a
// buffer's offsets into its block and a fragment's into its page are 32-bit,
// and an arena of 16 blocks, rounded up to a huge page, must fit an int.
const maxBlockSize = min(math.MaxInt32, maxArenaBytes/16)

// maxArenaBytes bounds the size of one arena, in bytes, so that rounding it up
// to a huge page does not overflow an int.
const maxArenaBytes = math.MaxInt - hugePageSize

// configError is New's error for a bad Config: its message names the field,
// the value and the rule, and it wraps ErrConfig.
type configError struct{ msg string }

func (e *configError) Error() string { return "pool: new: " + e.msg }
func (e *configError) Unwrap() error { return ErrConfig }

func configErr(format string, args ...any) error {
	return &configError{fmt.Sprintf(format, args...)}
}

// checkClass checks class i of the Config (its index in Config.Classes) on
// its own; New checks that sizes are distinct.
func (p *Pool) checkClass(i int, c Class) error {
	switch {
	case c.Size < 64:
		return configErr("class %d: size %d: want at least 64 bytes", i, c.Size)
	case c.Size > maxBlockSize:
		return configErr("class %d: size %d: want at most %d bytes", i, c.Size, maxBlockSize)
	case c.Size <= p.headroom:
		return configErr("class %d: size %d: want more than the headroom of %d bytes", i, c.Size, p.headroom)
	case c.Max < 0:
		return configErr("class %d: max %d: want 0 (unbounded) or more", i, c.Max)
	case c.ArenaBlocks < 0:
		return configErr("class %d: arena blocks %d: want 0 (about 2 MiB) or more", i, c.ArenaBlocks)
	case c.Contiguous && c.Max == 0:
		return configErr("class %d: contiguous with max 0: want Max set", i)
	case c.Contiguous && c.Max > maxArenaBytes/c.Size:
		return configErr("class %d: max %d: want at most %d blocks of %d bytes in a contiguous arena", i, c.Max, maxArenaBytes/c.Size, c.Size)
	case !c.Contiguous && c.ArenaBlocks > maxArenaBytes/c.Size:
		return configErr("class %d: arena blocks %d: want at most %d blocks of %d bytes in an arena", i, c.ArenaBlocks, maxArenaBytes/c.Size, c.Size)
	}
	return nil
}

// Headroom returns the headroom Alloc reserves, in bytes.
func (p *Pool) Headroom() int { return p.headroom }

// Closed reports whether Close was called.
func (p *Pool) Closed() bool { return p.shut.Load() }

// Classes returns the size classes, smallest first.
func (p *Pool) Classes() []Class { return slices.Clone(p.cfg.Classes) }

// MaxAlloc returns the largest size Alloc accepts: the biggest class minus
// the headroom, in bytes.
func (p *Pool) MaxAlloc() int { return p.classes[len(p.classes)-1].cfg.Size - p.headroom }

// Arena returns the first arena of size class i (in Classes order), which is
// its only one when the class is Contiguous: the region to register as an
// AF_XDP UMEM. It returns nil when the class has no arena yet, and panics
// when i is not a class index (0 to len(Classes())-1).
func (p *Pool) Arena(i int) *Arena {
	if i < 0 || i >= len(p.classes) {
		panic(fmt.Sprintf("pool: arena of class %d: the pool has classes 0 to %d", i, len(p.classes)-1))
	}
	c := p.classes[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.arenas) == 0 {
		return nil
	}
	return c.arenas[0]
}

// classFor returns the index of the smallest class holding n bytes, or -1.
func (p *Pool) classFor(n int) int {
	for i, c := range p.classes {
		if n <= c.cfg.Size {
			return i
		}
	}
	return -1
}

// grow maps one more arena for c and puts its blocks in the depot. c.mu held.
// It returns ErrClosed once the pool is closed: unmapAll takes c.mu after
// Close marks the pool shut, so an allocation racing with Close maps no arena
// that would outlive the unmapping.
func (p *Pool) grow(c *class) error {
	if p.shut.Load() {
		return ErrClosed
	}
	n := c.cfg.ArenaBlocks
	if c.cfg.Contiguous {
		n = c.cfg.Max
	}
	if n == 0 {
		n = max(16, hugePageSize/c.cfg.Size)
		if len(c.arenas) == 0 && !p.cfg.HugePages {
			// A class's first arena is smaller: its headers are made
			// with it, and 4096 of them (the 512-byte class) took the
			// first allocation of the class 10-15 ms on a host with slow
			// page faults, where a receiver's first copybreak copy
			// waited on them.
			n = max(16, firstArenaBytes/c.cfg.Size)
		}
	}
	if c.cfg.Max > 0 {
		n = min(n, c.cfg.Max-c.blocks)
	}
	if n <= 0 {
		return ErrExhausted
	}
	a, err := mapArena(c.cfg.Size, n, p.cfg.HugePages, p.cfg.Populate)
	if err != nil {
		return err
	}
	slab := make([]skb.Shared, n)
	hdrs := make([]skb.Buff, n)
	for i := range slab {
		off := i * c.cfg.Size
		slab[i].InitShared(a.mem[off:off+c.cfg.Size], uint64(off), p, uint8(c.idx))
		hdrs[i].InitBuff(p)
		hdrs[i].Attach(&slab[i])
	}
	// Hand out low addresses first: the depot is a stack.
	for i := n - 1; i >= 0; i-- {
		c.free = append(c.free, &hdrs[i])
	}
	c.arenas = append(c.arenas, a)
	c.blocks += n
	return nil
}

// take moves up to n free blocks (paired with headers) of class c onto dst,
// growing the class when its depot is empty. It returns the extended slice and
// ErrExhausted when it could move none.
func (p *Pool) take(c *class, dst []*skb.Buff, n int) ([]*skb.Buff, error) {
	c.mu.Lock()
	if len(c.free) == 0 {
		if err := p.grow(c); err != nil {
			c.mu.Unlock()
			if errors.Is(err, ErrExhausted) {
				c.exhausted.Add(1)
			}
			return dst, err
		}
	}
	k := min(n, len(c.free))
	dst = append(dst, c.free[len(c.free)-k:]...)
	clear(c.free[len(c.free)-k:])
	c.free = c.free[:len(c.free)-k]
	c.mu.Unlock()
	return dst, nil
}

// give moves blocks (paired with headers) back to the depot of class c.
func (p *Pool) give(c *class, src []*skb.Buff) {
	c.mu.Lock()
	c.free = append(c.free, src...)
	c.mu.Unlock()
}

// Alloc returns an empty buffer with Headroom bytes of headroom and at least
// size bytes of tailroom, from the smallest class that fits. Safe for
// concurrent use; it takes a depot lock, so hot paths use Cache.Alloc. The
// caller owns the returned buffer and must Free it or pass it on to a function
// that takes ownership. It returns ErrTooBig, ErrExhausted, or ErrClosed after
// Close; it panics on a negative size.
func (p *Pool) Alloc(size int) (*skb.Buff, error) {
	if size < 0 {
		panic(fmt.Sprintf("pool: alloc of %d bytes", size))
	}
	// The sum saturates at MaxInt, which no class holds, so that a size near
	// MaxInt is too big rather than wrapping round to a small one.
	b, err := p.takeOne(min(size, math.MaxInt-p.headroom)+p.headroom, true)
	if err != nil {
		return nil, err
	}
	b.Reuse(p.headroom)
	if p.dbg != nil {
		p.dbg.alloc(b, 2)
	}
	return b, nil
}

// takeOne takes one free block (with its header) of at least size bytes,
// and counts it (the header too when hdr) once it has it. It marks itself
// under way (allocating) before it checks that the pool is open: a Close
// that runs meanwhile either waits for it, and sees the count, or this sees
// the pool shut (sync/atomic's operations are sequentially consistent). A
// failed allocation is never counted, not even for a moment.
func (p *Pool) takeOne(size int, hdr bool) (*skb.Buff, error) {
	ci := p.classFor(size)
	if ci < 0 {
		if p.shut.Load() {
			return nil, ErrClosed
		}
		return nil, ErrTooBig
	}
	p.allocating.Add(1)
	defer p.allocating.Add(-1)
	if p.shut.Load() {
		return nil, ErrClosed
	}
	var one [1]*skb.Buff
	got, err := p.take(p.classes[ci], one[:0], 1)
	if err != nil {
		return nil, err
	}
	p.direct[ci].allocs.Add(1)
	if hdr {
		p.directHdr.allocs.Add(1)
	}
	return got[0], nil
}

// AllocShared returns a data block of at least size bytes, reset with dataref
// 1 (skb.Allocator). Safe for concurrent use. The caller owns the block and
// must Build a buffer on it or recycle it. It returns ErrTooBig,
// ErrExhausted, or ErrClosed after Close; it panics on a negative size, as
// Alloc does.
func (p *Pool) AllocShared(size int) (*skb.Shared, error) {
	if size < 0 {
		panic(fmt.Sprintf("pool: alloc of %d bytes", size))
	}
	h, err := p.takeOne(size, false)
	if err != nil {
		return nil, err
	}
	s := h.Detach()
	p.hdrs.give([]*skb.Buff{h})
	s.Reset()
	return s, nil
}

// RecycleShared takes back a data block whose last reference was dropped
// (skb.Recycler). Safe for concurrent use.
func (p *Pool) RecycleShared(s *skb.Shared) {
	if s.Home() != p {
		s.Home().RecycleShared(s)
		return
	}
	var one [1]*skb.Buff
	h := p.hdrs.take(one[:0], 1)[0]
	h.Attach(s)
	p.recyclePair(h)
}

// recyclePair takes back a free header paired with its free block.
func (p *Pool) recyclePair(h *skb.Buff) {
	s := h.Detach()
	ci := s.Class()
	if p.dbg != nil {
		p.dbg.poison(s)
	}
	p.direct[ci].frees.Add(1)
	p.give(p.classes[ci], []*skb.Buff{h})
}

// AllocBuff returns an unused buffer header (skb.Allocator). Safe for
// concurrent use. The caller owns it and must build or clone into it, or
// recycle it. It returns ErrClosed after Close.
func (p *Pool) AllocBuff() (*skb.Buff, error) {
	// Under way before the check, as takeOne is.
	p.allocating.Add(1)
	defer p.allocating.Add(-1)
	if p.shut.Load() {
		return nil, ErrClosed
	}
	var one [1]*skb.Buff
	b := p.hdrs.take(one[:0], 1)[0]
	p.directHdr.allocs.Add(1)
	if p.dbg != nil {
		p.dbg.alloc(b, 2)
	}
	return b, nil
}

// RecycleBuff takes back a buffer header (skb.Recycler). Safe for concurrent
// use. RecycleBuff takes ownership of b, which must already be released
// (skb.Buff.Release): users free buffers with Free.
func (p *Pool) RecycleBuff(b *skb.Buff) {
	if b.Home() != p {
		b.Home().RecycleBuff(b)
		return
	}
	p.directHdr.frees.Add(1)
	if p.dbg != nil {
		if b = p.dbg.free(b, 2); b == nil {
			return
		}
	}
	p.hdrs.give([]*skb.Buff{b})
}

// cacheCap is how many free blocks of a class a Cache holds: size
// (Config.CacheSize), or for a class bounded to bound blocks an eighth of
// them (1 at least), so that caches that only free blocks of a bounded
// class (a transmitting device's, freeing what it sent) hand them back to
// the depot while others still can allocate: one holding all of the
// class's blocks, short of its size, would starve the caches that allocate
// (a receiving device's) for good.
func cacheCap(size, bound int) int {
	if bound > 0 {
		return min(size, max(1, bound/8))
	}
	return size
}

// NewCache returns a cache for one goroutine. Close it when the goroutine is
// done, to hand its buffers back to the depots. It panics on a closed pool.
func (p *Pool) NewCache() *Cache {
	if p.shut.Load() {
		panic("pool: NewCache on a closed pool")
	}
	c := &Cache{p: p, size: p.cfg.CacheSize, headroom: p.headroom, debug: p.dbg != nil}
	c.ncls = len(p.classes)
	for i := range c.ncls {
		c.cls[i].free = make([]*skb.Buff, 0, cacheCap(c.size, p.classes[i].cfg.Max))
		c.cls[i].blockSize = p.classes[i].cfg.Size
	}
	c.hdrs = make([]*skb.Buff, 0, c.size)
	c.fillClassTab()
	if !c.debug {
		c.fastHome = p
	}
	p.mu.Lock()
	p.caches = append(p.caches, c)
	p.mu.Unlock()
	return c
}

// Close checks that every buffer came back and unmaps the arenas. With buffers
// still in flight it returns an error wrapping ErrLeak and leaves the memory
// mapped; once they are freed, Close called again unmaps it and returns nil
// (or ErrLeak again while some are still out). Caches still open are closed
// first, from the caller's goroutine: the goroutines that own them must have
// stopped using them (a Cache belongs to one goroutine), or a buffer one of
// them still holds would point into unmapped memory. After a Close that
// unmapped the arenas it returns ErrClosed.
func (p *Pool) Close() error {
	// One Close at a time: a second waits and then finds the pool closed.
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	p.mu.Lock()
	if p.unmapped {
		p.mu.Unlock()
		return ErrClosed
	}
	if p.closed {
		p.mu.Unlock()
		return p.closeAgain()
	}
	caches := slices.Clone(p.caches)
	p.mu.Unlock()
	for _, c := range caches {
		c.Close()
	}
	p.mu.Lock()
	p.closed = true
	p.shut.Store(true)
	p.mu.Unlock()
	// Allocations that saw the pool open finish (and count) first.
	for p.allocating.Load() != 0 {
		runtime.Gosched()
	}
	if err := p.leakError(); err != nil {
		return err
	}
	p.mu.Lock()
	p.unmapped = true
	p.mu.Unlock()
	unregister(p)
	return p.unmapAll()
}

// closeAgain is Close after a Close that found buffers in flight: it
// unmaps the arenas once they all came back.
func (p *Pool) closeAgain() error {
	if err := p.leakError(); err != nil {
		return err
	}
	p.mu.Lock()
	if p.unmapped {
		p.mu.Unlock()
		return ErrClosed
	}
	p.unmapped = true
	p.mu.Unlock()
	unregister(p)
	return p.unmapAll()
}

func (p *Pool) unmapAll() error {
	var errs []error
	for _, c := range p.classes {
		c.mu.Lock()
		for _, a := range c.arenas {
			errs = append(errs, a.unmap())
		}
		c.arenas, c.free = nil, nil
		c.mu.Unlock()
	}
	errs = append(errs, p.pages.unmapAll())
	return errors.Join(errs...)
}

// Owns reports whether b's data block lies in one of p's arenas, so that its
// HeadAddr is an address in p's memory (an AF_XDP driver transmits such a
// buffer without copying it). Owns does not take ownership of b and does not
// keep it after returning. A nil b is not p's.
func (p *Pool) Owns(b *skb.Buff) bool { return b != nil && b.DataHome() == skb.Recycler(p) }
