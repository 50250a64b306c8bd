package pool

import "fmt"

// ClassStats counts the life of one size class, or of the headers or pages.
// Counts are since New; figures from caches in use are read without stopping
// them, so they are exact only when the pool is quiet.
type ClassStats struct {
	// Size is the block size in bytes (0 for headers).
	Size int
	// Blocks is how many blocks (headers, pages) exist, free or not. For
	// Headers it counts the spare headers clones take (made 256 at a
	// time): a block's own header is made with the block, and counts in
	// its class's Blocks.
	Blocks int
	// InFlight is Allocs minus Frees: blocks handed out and not yet back.
	InFlight int64
	// Allocs and Frees count blocks handed out and taken back.
	Allocs, Frees uint64
	// CacheHits counts allocations a Cache served from its own stack;
	// CacheMisses counts those that first refilled it from the depot.
	CacheHits, CacheMisses uint64
	// Exhausted counts allocations refused with ErrExhausted.
	Exhausted uint64
}

// Stats is a snapshot of a pool's counters.
type Stats struct {
	// Classes holds one entry per size class, smallest first.
	Classes []ClassStats
	// Headers counts buffer headers (skb.Buff), clones included.
	Headers ClassStats
	// Pages counts the page-frag allocator's pages; a page counts as in
	// flight while any fragment or a cache holds a reference to it.
	Pages ClassStats
	// Arenas and MappedBytes count the memory mapped for blocks and pages.
	Arenas      int
	MappedBytes int
	// HugePages reports whether any arena is backed by explicit huge pages.
	HugePages bool
}

// InFlight returns the buffers (headers) in flight.
func (s Stats) InFlight() int64 { return s.Headers.InFlight }

func (s *ClassStats) add(c *counters) {
	s.Allocs += c.allocs.load()
	s.Frees += c.frees.load()
	s.CacheMisses += c.misses.load()
}

func (s *ClassStats) addShared(c *sharedCounters) {
	s.Allocs += c.allocs.Load()
	s.Frees += c.frees.Load()
	s.CacheMisses += c.misses.Load()
}

func (s *ClassStats) finish() {
	s.InFlight = int64(s.Allocs) - int64(s.Frees)
	if s.Allocs > s.CacheMisses {
		s.CacheHits = s.Allocs - s.CacheMisses
	}
}

// Stats returns the pool's counters, summed over its caches. Safe for
// concurrent use.
func (p *Pool) Stats() Stats {
	var st Stats
	st.Classes = make([]ClassStats, len(p.classes))
	p.mu.Lock()
	caches := p.caches
	for i, c := range p.classes {
		cs := &st.Classes[i]
		cs.Size = c.cfg.Size
		cs.addShared(&p.retiredCls[i])
		cs.addShared(&p.direct[i])
		for _, k := range caches {
			cs.add(&k.cls[i].st)
			cs.add(&k.cls[i].blk)
		}
	}
	st.Headers.addShared(&p.retiredHdr)
	st.Headers.addShared(&p.directHdr)
	for _, k := range caches {
		st.Headers.add(&k.hdrSt)
		// A buffer allocated or freed whole is a header too.
		for i := range k.ncls {
			st.Headers.Allocs += k.cls[i].st.allocs.load()
			st.Headers.Frees += k.cls[i].st.frees.load()
		}
	}
	p.mu.Unlock()
	for i, c := range p.classes {
		cs := &st.Classes[i]
		cs.finish()
		// Direct allocations never hit a cache.
		cs.CacheHits -= min(cs.CacheHits, p.direct[i].allocs.Load())
		c.mu.Lock()
		cs.Blocks = c.blocks
		for _, a := range c.arenas {
			st.Arenas++
			st.MappedBytes += len(a.mem)
			st.HugePages = st.HugePages || a.huge
		}
		c.mu.Unlock()
		cs.Exhausted = c.exhausted.Load()
	}
	st.Headers.finish()
	st.Headers.CacheHits -= min(st.Headers.CacheHits, p.directHdr.allocs.Load())
	p.hdrs.mu.Lock()
	st.Headers.Blocks = p.hdrs.total
	p.hdrs.mu.Unlock()
	d := &p.pages
	d.mu.Lock()
	st.Pages.Size = p.cfg.PageSize
	st.Pages.Blocks = d.pages
	st.Pages.Exhausted = d.exhausted
	for _, a := range d.arenas {
		st.Arenas++
		st.MappedBytes += len(a.mem)
		st.HugePages = st.HugePages || a.huge
	}
	d.mu.Unlock()
	st.Pages.addShared(&d.st)
	st.Pages.finish()
	st.Pages.CacheHits = 0
	return st
}

// String formats the snapshot as one line per class, for logs and tests.
func (s Stats) String() string {
	out := ""
	line := func(name string, c ClassStats) {
		out += fmt.Sprintf("%-8s size %6d blocks %7d in_flight %6d allocs %d frees %d hits %d misses %d exhausted %d\n",
			name, c.Size, c.Blocks, c.InFlight, c.Allocs, c.Frees, c.CacheHits, c.CacheMisses, c.Exhausted)
	}
	for _, c := range s.Classes {
		line("class", c)
	}
	line("headers", s.Headers)
	line("pages", s.Pages)
	return out
}
