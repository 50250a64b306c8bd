package pool_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/pool/pooltest"
	"github.com/skbdev/skb/skb"
)

func TestMain(m *testing.M) { pooltest.Main(m) }

func newPool(t *testing.T, cfg pool.Config) *pool.Pool {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = t.Name()
	}
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil && !errors.Is(err, pool.ErrClosed) {
			t.Error(err)
		}
	})
	return p
}

// TestConfigErrors checks that New refuses each bad Config with an error that
// wraps ErrConfig and names the field, its value and the rule.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  pool.Config
		want string
	}{
		{"negative headroom", pool.Config{Headroom: -2}, "pool: new: headroom -2: want 0 (the default), NoHeadroom (-1) or more"},
		{"no classes", pool.Config{Classes: []pool.Class{}}, "pool: new: 0 size classes: want 1 to 8"},
		{"nine classes", pool.Config{Classes: make([]pool.Class, 9)}, "pool: new: 9 size classes: want 1 to 8"},
		{"small class", pool.Config{Classes: []pool.Class{{Size: 32}}}, "pool: new: class 0: size 32: want at least 64 bytes"},
		{"small second class", pool.Config{Classes: []pool.Class{{Size: 512}, {Size: 63}}}, "pool: new: class 1: size 63: want at least 64 bytes"},
		{"huge class", pool.Config{Classes: []pool.Class{{Size: math.MaxInt}}}, fmt.Sprintf("pool: new: class 0: size %d: want at most", math.MaxInt)},
		{"duplicate class", pool.Config{Classes: []pool.Class{{Size: 512}, {Size: 2048}, {Size: 512}}}, "pool: new: classes 0 and 2: size 512 twice: want distinct sizes"},
		{"contiguous without max", pool.Config{Classes: []pool.Class{{Size: 2048, Contiguous: true}}}, "pool: new: class 0: contiguous with max 0: want Max set"},
		{"class within headroom", pool.Config{Classes: []pool.Class{{Size: 100}}}, "pool: new: class 0: size 100: want more than the headroom of 128 bytes"},
		{"negative max", pool.Config{Classes: []pool.Class{{Size: 512, Max: -1}}}, "pool: new: class 0: max -1: want 0 (unbounded) or more"},
		{"negative arena blocks", pool.Config{Classes: []pool.Class{{Size: 512, ArenaBlocks: -3}}}, "pool: new: class 0: arena blocks -3: want 0 (about 2 MiB) or more"},
		{"arena overflows", pool.Config{Classes: []pool.Class{{Size: 1024, ArenaBlocks: math.MaxInt / 512}}}, fmt.Sprintf("pool: new: class 0: arena blocks %d: want at most", math.MaxInt/512)},
		{"contiguous arena overflows", pool.Config{Classes: []pool.Class{{Size: 2048, Max: math.MaxInt, Contiguous: true}}}, fmt.Sprintf("pool: new: class 0: max %d: want at most", math.MaxInt)},
		{"small page", pool.Config{PageSize: 100}, "pool: new: page size 100: want at least 4096 bytes"},
		{"negative page", pool.Config{PageSize: -1}, "pool: new: page size -1: want at least 4096 bytes"},
		{"huge page size", pool.Config{PageSize: math.MaxInt}, fmt.Sprintf("pool: new: page size %d: want at most", math.MaxInt)},
		{"small cache", pool.Config{CacheSize: 1}, "pool: new: cache size 1: want 2 to 65536"},
		{"huge cache", pool.Config{CacheSize: math.MaxInt}, fmt.Sprintf("pool: new: cache size %d: want 2 to 65536", math.MaxInt)},
		{"large cache", pool.Config{CacheSize: pool.MaxCacheSize + 1}, "pool: new: cache size 65537: want 2 to 65536"},
		{"negative max pages", pool.Config{MaxPages: -1}, "pool: new: max pages -1: want 0 (unbounded) or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pool.New(tt.cfg)
			if err == nil {
				p.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, pool.ErrConfig) {
				t.Errorf("%v does not wrap ErrConfig", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestClassesAndHeadroom(t *testing.T) {
	p := newPool(t, pool.Config{})
	c := p.NewCache()
	defer c.Close()
	for _, tc := range []struct{ size, end int }{
		{0, pool.SmallSize}, {256, pool.SmallSize}, {384, pool.SmallSize}, {385, pool.FrameSize},
		{1514, pool.FrameSize}, {1920, pool.FrameSize}, {1921, pool.LargeSize}, {65535, pool.LargeSize},
	} {
		b, err := c.Alloc(tc.size)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", tc.size, err)
		}
		if b.End() != tc.end || b.Headroom() != skb.DefaultHeadroom || b.Tailroom() < tc.size {
			t.Errorf("Alloc(%d): end %d headroom %d tailroom %d", tc.size, b.End(), b.Headroom(), b.Tailroom())
		}
		c.Free(b)
	}
	if _, err := c.Alloc(p.MaxAlloc() + 1); !errors.Is(err, pool.ErrTooBig) {
		t.Fatalf("oversized: %v", err)
	}
	// Sizes whose sum with the headroom overflows an int are too big too.
	for _, size := range []int{math.MaxInt, math.MaxInt - p.Headroom() + 1, math.MaxInt - 1} {
		for name, f := range map[string]func() error{
			"Pool.Alloc":        func() error { _, err := p.Alloc(size); return err },
			"Pool.AllocShared":  func() error { _, err := p.AllocShared(size); return err },
			"Cache.Alloc":       func() error { _, err := c.Alloc(size); return err },
			"Cache.AllocN":      func() error { _, err := c.AllocN(make([]*skb.Buff, 2), size); return err },
			"Cache.AllocShared": func() error { _, err := c.AllocShared(size); return err },
		} {
			if err := f(); !errors.Is(err, pool.ErrTooBig) {
				t.Errorf("%s(%d): %v, want ErrTooBig", name, size, err)
			}
		}
	}
	if st := p.Stats(); st.InFlight() != 0 || st.Classes[0].InFlight != 0 {
		t.Fatalf("oversized allocations handed out buffers: %v", st)
	}
	for _, f := range []func(){
		func() { c.Alloc(-1) },
		func() { p.Alloc(-1) },
		func() { c.AllocN(make([]*skb.Buff, 1), -5) },
		func() { c.AllocShared(-1) },
		func() { p.AllocShared(-1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "alloc of -") {
					t.Fatalf("negative size: recovered %v", r)
				}
			}()
			f()
		}()
	}
	q := newPool(t, pool.Config{Headroom: pool.NoHeadroom})
	b, err := q.Alloc(10)
	if err != nil || b.Headroom() != 0 {
		t.Fatalf("no headroom: %v %d", err, b.Headroom())
	}
	b.Free()
}

func TestExhaustedNeverBlocks(t *testing.T) {
	p := newPool(t, pool.Config{Classes: []pool.Class{{Size: 2048, Max: 40}}, CacheSize: 16})
	c := p.NewCache()
	defer c.Close()
	var got []*skb.Buff
	for {
		b, err := c.Alloc(100)
		if errors.Is(err, pool.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
		if len(got) > 40 {
			t.Fatal("bounded class handed out more than Max")
		}
	}
	if len(got) != 40 {
		t.Fatalf("got %d buffers of 40", len(got))
	}
	if _, err := p.Alloc(1); !errors.Is(err, pool.ErrExhausted) {
		t.Fatalf("pool alloc: %v", err)
	}
	bs := make([]*skb.Buff, 8)
	if n, err := c.AllocN(bs, 1); n != 0 || !errors.Is(err, pool.ErrExhausted) {
		t.Fatalf("AllocN: %d %v", n, err)
	}
	st := p.Stats()
	if st.Classes[0].InFlight != 40 || st.Classes[0].Exhausted == 0 || st.Classes[0].Blocks != 40 {
		t.Fatalf("stats: %+v", st.Classes[0])
	}
	c.FreeN(got)
	b, err := c.Alloc(100)
	if err != nil {
		t.Fatalf("after frees: %v", err)
	}
	c.Free(b)
}

func TestStats(t *testing.T) {
	p := newPool(t, pool.Config{CacheSize: 8})
	c := p.NewCache()
	bs := make([]*skb.Buff, 20)
	if n, err := c.AllocN(bs, 1000); n != 20 || err != nil {
		t.Fatal(n, err)
	}
	st := p.Stats()
	f := st.Classes[1]
	if f.Allocs != 20 || f.InFlight != 20 || f.CacheMisses == 0 || f.CacheHits+f.CacheMisses != 20 {
		t.Fatalf("after allocs: %+v", f)
	}
	if st.InFlight() != 20 || st.Arenas == 0 || st.MappedBytes == 0 {
		t.Fatalf("totals: %+v", st)
	}
	cl := c.Clone(bs[0])
	if p.Stats().Headers.InFlight != 21 || p.Stats().Classes[1].InFlight != 20 {
		t.Fatalf("clone counted: %+v", p.Stats().Headers)
	}
	c.Free(cl)
	c.FreeN(bs)
	c.Close()
	st = p.Stats()
	if st.Classes[1].InFlight != 0 || st.Headers.InFlight != 0 || st.Classes[1].Frees != 20 {
		t.Fatalf("after frees: %v", st)
	}
	if !strings.Contains(st.String(), "in_flight") {
		t.Fatal(st.String())
	}
}

func TestContiguousArena(t *testing.T) {
	p := newPool(t, pool.Config{Classes: []pool.Class{{Size: 2048, Max: 64, Contiguous: true}}, Populate: true})
	a := p.Arena(0)
	if a == nil || a.BlockSize() != 2048 || a.Blocks() != 64 || len(a.Bytes()) != 64*2048 {
		t.Fatalf("arena: %+v", a)
	}
	c := p.NewCache()
	defer c.Close()
	seen := map[uint64]bool{}
	var bs []*skb.Buff
	for range 64 {
		b, err := c.Alloc(100)
		if err != nil {
			t.Fatal(err)
		}
		addr := b.HeadAddr()
		if addr%2048 != 0 || addr >= 64*2048 || seen[addr] {
			t.Fatalf("block address %d", addr)
		}
		seen[addr] = true
		// The block is the arena's memory at that address.
		b.Put(4)[0] = 0xab
		if a.Bytes()[addr+uint64(b.Headroom())] != 0xab {
			t.Fatal("HeadAddr does not address the arena")
		}
		if !p.Owns(b) {
			t.Fatal("Owns")
		}
		bs = append(bs, b)
	}
	other := newPool(t, pool.Config{})
	ob, _ := other.Alloc(1)
	if p.Owns(ob) {
		t.Fatal("Owns a foreign buffer")
	}
	ob.Free()
	c.FreeN(bs)
}

// TestHugePagesFallBack checks that every class's first arena of a pool
// with HugePages, where the host has no huge pages reserved for
// MAP_HUGETLB, is mapped as whole huge pages from a huge page boundary, so
// that transparent huge pages can back it (the 68 KiB class's 30 blocks,
// 2088960 bytes, were mapped as no whole one), and logs how much of it
// they back; with pages reserved it checks that the pool closes.
func TestHugePagesFallBack(t *testing.T) {
	p := newPool(t, pool.Config{HugePages: true})
	for i, c := range p.Classes() {
		b, err := p.Alloc(c.Size - p.Headroom())
		if err != nil {
			t.Fatal(err)
		}
		b.Put(100)[99] = 1
		a := p.Arena(i)
		mem := a.Bytes()
		start := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
		if a.HugePages() {
			t.Logf("class %d: explicit huge pages", c.Size)
		} else if runtime.GOOS == "linux" && start%(2<<20) != 0 {
			t.Errorf("class %d: arena of %d bytes at %#x: want it mapped from a 2 MiB boundary", c.Size, len(mem), start)
		} else {
			t.Logf("class %d: arena of %d bytes at %#x, %s", c.Size, len(mem), start, anonHuge(start))
		}
		b.Free()
	}
	t.Logf("huge pages in use: %v", p.Stats().HugePages)
}

// anonHuge returns the AnonHugePages line of /proc/self/smaps for the
// mapping that starts at start, or why there is none.
func anonHuge(start uintptr) string {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return err.Error()
	}
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		if lo, _, ok := strings.Cut(strings.Fields(l + " x")[0], "-"); ok && !strings.Contains(l, ":  ") {
			if v, err := strconv.ParseUint(lo, 16, 64); err == nil {
				in = uintptr(v) == start
			}
		}
		if in && strings.HasPrefix(l, "AnonHugePages:") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return "no mapping found in smaps"
}

func TestFrags(t *testing.T) {
	p := newPool(t, pool.Config{PageSize: 4096, MaxPages: 2})
	c := p.NewCache()
	b, _ := c.Alloc(0)
	for i := range 5 {
		pg, off, err := c.AllocFrag(1000)
		if err != nil {
			t.Fatal(i, err)
		}
		if off%64 != 0 || off+1000 > pg.Len() {
			t.Fatalf("frag %d at %d", i, off)
		}
		b.AddRxFrag(pg, off, 1000)
	}
	if b.Len() != 5000 || b.DataLen() != 5000 || b.NrFrags() != 5 {
		t.Fatalf("len %d data_len %d frags %d", b.Len(), b.DataLen(), b.NrFrags())
	}
	if _, _, err := c.AllocFrag(5000); !errors.Is(err, pool.ErrTooBig) {
		t.Fatal(err)
	}
	// An empty fragment is one, as the kernel's page_frag_alloc gives; a
	// negative size is the caller's bug.
	pg, off, err := c.AllocFrag(0)
	if err != nil || off > pg.Len() {
		t.Fatalf("AllocFrag(0): %v at %d", err, off)
	}
	pg.Put()
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "alloc frag of -1 bytes") {
				t.Errorf("AllocFrag(-1) recovered %v", r)
			}
		}()
		c.AllocFrag(-1)
	}()
	for range 4 {
		if _, _, err := c.AllocFrag(4096); err != nil {
			// two pages in all: the cache holds one, the buffer the other
			if !errors.Is(err, pool.ErrExhausted) {
				t.Fatal(err)
			}
			break
		}
	}
	c.Free(b)
	c.Close()
	if st := p.Stats(); st.Pages.InFlight != 0 {
		t.Fatalf("pages in flight: %+v", st.Pages)
	}
}

// TestFragPutTooMany checks that a Put more than the references a
// fragment's holder took panics at that Put, naming the page, while its
// cache still carves from the page: unchecked, the page would go back to
// the depot, and the cache and the next to take it would hand out the
// same bytes twice.
func TestFragPutTooMany(t *testing.T) {
	p := newPool(t, pool.Config{PageSize: 4096})
	c1, c2 := p.NewCache(), p.NewCache()
	pg, _, err := c1.AllocFrag(100)
	if err != nil {
		t.Fatal(err)
	}
	if pg.Refs() != 2 {
		t.Fatalf("refs %d, want 2: the cache's and the caller's", pg.Refs())
	}
	pg.Put()
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "freed while a cache still carves fragments from it") {
				t.Errorf("a second Put recovered %v", r)
			}
		}()
		pg.Put()
	}()
	// The page was not recycled: c2 gets another.
	q, _, err := c2.AllocFrag(100)
	if err != nil {
		t.Fatal(err)
	}
	if q == pg {
		t.Error("c2 took the page c1 still carves from")
	}
	q.Put()
	if pg.Refs() != 1 {
		t.Errorf("refs %d after the refused Put, want 1: the cache's", pg.Refs())
	}
	c1.Close()
	c2.Close()
}

func TestLeakReport(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "leaky", Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	b, _ := c.Alloc(10)
	live := p.Outstanding()
	if len(live) != 1 || live[0].Buff != b || !strings.Contains(live[0].Site, "TestLeakReport") {
		t.Fatalf("outstanding: %+v", live)
	}
	err = p.Close()
	if !errors.Is(err, pool.ErrLeak) || !strings.Contains(err.Error(), "leaky") || !strings.Contains(err.Error(), "TestLeakReport") {
		t.Fatalf("close: %v", err)
	}
	if err := pool.CheckLeaks(); !errors.Is(err, pool.ErrLeak) {
		t.Fatalf("CheckLeaks: %v", err)
	}
	// A second Close still finds it out.
	if err := p.Close(); !errors.Is(err, pool.ErrLeak) {
		t.Fatalf("close again with the buffer out: %v", err)
	}
	// Give it back so that this binary's TestMain finds no leak.
	b.Free()
	if err := pool.CheckLeaks(); err != nil {
		t.Fatalf("after free: %v", err)
	}
	// Now Close unmaps the arenas, once.
	if err := p.Close(); err != nil {
		t.Fatalf("close after the buffer came back: %v", err)
	}
	if err := p.Close(); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("close a third time: %v", err)
	}
}

func TestUseAfterFreePoisons(t *testing.T) {
	p := newPool(t, pool.Config{Debug: true})
	c := p.NewCache()
	defer c.Close()
	b, _ := c.Alloc(10)
	d := b.Put(10)
	copy(d, "0123456789")
	c.Free(b)
	if d[0] != 0x6b || d[9] != 0x6b {
		t.Fatalf("freed data not poisoned: %x", d)
	}
	if b.IsLive() {
		t.Fatal("freed buffer live")
	}
}

func TestForeignBuffersGoHome(t *testing.T) {
	p := newPool(t, pool.Config{})
	q := newPool(t, pool.Config{})
	cp, cq := p.NewCache(), q.NewCache()
	defer cp.Close()
	defer cq.Close()
	b, _ := cp.Alloc(10)
	cq.Free(b) // a buffer of p freed into q's cache goes back to p
	if p.Stats().InFlight() != 0 || q.Stats().Headers.Frees != 0 {
		t.Fatalf("p %v q %v", p.Stats(), q.Stats())
	}
	// A buffer of p whose head was reallocated by q's cache.
	b, _ = cp.Alloc(10)
	if err := b.ExpandHead(cq, 64, 0); err != nil {
		t.Fatal(err)
	}
	cp.Free(b)
	if p.Stats().InFlight() != 0 || q.Stats().Classes[0].InFlight != 0 {
		t.Fatalf("p %v q %v", p.Stats(), q.Stats())
	}
}

func TestPoolMethodsConcurrent(t *testing.T) {
	p := newPool(t, pool.Config{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 2000 {
				b, err := p.Alloc(i % 3000)
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := b.Clone(p)
				n.Free()
				b.Free()
			}
		})
	}
	wg.Wait()
	if p.Stats().InFlight() != 0 {
		t.Fatal(p.Stats())
	}
}

// TestWorkersPassBuffers runs workers, each with its own cache, that allocate
// buffers, clone some, and pass them round a ring of channels to be freed by
// the next worker: blocks flow back through the depot. Run it with -race.
// Nothing may be lost or leaked.
func TestWorkersPassBuffers(t *testing.T) {
	p := newPool(t, pool.Config{Classes: []pool.Class{{Size: 512, Max: 3000}, {Size: 2048, Max: 3000}}, CacheSize: 32, Debug: testing.Short()})
	const workers, per = 4, 20000
	chans := make([]chan *skb.Buff, workers)
	for i := range chans {
		chans[i] = make(chan *skb.Buff, 64)
	}
	var wg, producing sync.WaitGroup
	var sent, freed [workers]int
	allDone := make(chan struct{})
	producing.Add(workers)
	go func() { producing.Wait(); close(allDone) }()
	for w := range workers {
		wg.Go(func() {
			c := p.NewCache()
			defer c.Close()
			// A worker that is done keeps draining its input until every
			// worker is done, so that no sender waits on it forever.
			defer func() {
				producing.Done()
				for {
					select {
					case x := <-chans[w]:
						c.Free(x)
						freed[w]++
					case <-allDone:
						return
					}
				}
			}()
			out, in := chans[(w+1)%workers], chans[w]
			for i := range per {
				b, err := c.Alloc(i % 1500)
				if errors.Is(err, pool.ErrExhausted) {
					// Blocks sit in other workers' queues: free what
					// they sent us to make room, and skip this one.
					select {
					case x := <-in:
						c.Free(x)
						freed[w]++
					default:
					}
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				b.Put(1)[0] = byte(w)
				// Sending must not block while our own input is full, or
				// the ring of workers would deadlock: drain while waiting.
				send := func(x *skb.Buff) {
					for {
						select {
						case out <- x:
							sent[w]++
							return
						case y := <-in:
							c.Free(y)
							freed[w]++
						}
					}
				}
				if i%7 == 0 {
					send(c.Clone(b))
				}
				send(b)
				for len(in) > 32 {
					c.Free(<-in)
					freed[w]++
				}
			}
		})
	}
	wg.Wait()
	for w := range workers {
		close(chans[w])
		c := p.NewCache()
		for b := range chans[w] {
			c.Free(b)
			freed[w]++
		}
		c.Close()
	}
	total := func(a [workers]int) (n int) {
		for _, x := range a {
			n += x
		}
		return n
	}
	if total(sent) != total(freed) {
		t.Fatalf("sent %d freed %d", total(sent), total(freed))
	}
	if st := p.Stats(); st.InFlight() != 0 || st.Classes[0].InFlight != 0 || st.Classes[1].InFlight != 0 {
		t.Fatalf("after the run: %v", st)
	}
}

func TestClosedCache(t *testing.T) {
	p := newPool(t, pool.Config{Debug: true})
	c := p.NewCache()
	b, _ := c.Alloc(10)
	n := c.Clone(b)
	c.Close()
	c.Free(n)
	c.Free(b)
	if st := p.Stats(); st.InFlight() != 0 || st.Classes[0].InFlight != 0 {
		t.Fatalf("frees into a closed cache lost: %v", st)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("allocation from a closed cache did not panic")
		}
	}()
	for range 1000 {
		x, _ := c.Alloc(10)
		_ = x
	}
}

// TestClosedCacheRefuses checks that every allocation entry point of a
// closed cache panics, whatever the size asked for, and takes nothing from
// the pool.
func TestClosedCacheRefuses(t *testing.T) {
	p := newPool(t, pool.Config{PageSize: 4096})
	live, err := p.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Free()
	for _, tc := range []struct {
		name string
		f    func(c *pool.Cache)
	}{
		{"Alloc", func(c *pool.Cache) { c.Alloc(10) }},
		{"Alloc too big", func(c *pool.Cache) { c.Alloc(p.MaxAlloc() + 1) }},
		{"AllocN", func(c *pool.Cache) { c.AllocN(make([]*skb.Buff, 4), 10) }},
		{"AllocN too big", func(c *pool.Cache) { c.AllocN(make([]*skb.Buff, 4), p.MaxAlloc()+1) }},
		{"AllocShared", func(c *pool.Cache) { c.AllocShared(10) }},
		{"AllocShared too big", func(c *pool.Cache) { c.AllocShared(pool.LargeSize + 1) }},
		{"AllocBuff", func(c *pool.Cache) { c.AllocBuff() }},
		{"Clone", func(c *pool.Cache) { c.Clone(live) }},
		{"AllocFrag", func(c *pool.Cache) {
			if pg, _, err := c.AllocFrag(100); err == nil {
				pg.Put()
			}
		}},
		{"AllocFrag too big", func(c *pool.Cache) { c.AllocFrag(5000) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := p.Stats()
			c := p.NewCache()
			c.Close()
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "closed cache") {
						t.Errorf("recovered %v, want the closed cache panic", r)
					}
				}()
				tc.f(c)
			}()
			after := p.Stats()
			if after.InFlight() != before.InFlight() || after.Pages.Allocs != before.Pages.Allocs || after.Pages.InFlight != 0 {
				t.Errorf("a closed cache handed something out: before %v after %v", before, after)
			}
		})
	}
}

func TestClosedPool(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "closed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Alloc(64); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("Alloc after Close: %v", err)
	}
	if _, err := p.AllocShared(64); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("AllocShared after Close: %v", err)
	}
	if _, err := p.AllocBuff(); !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("AllocBuff after Close: %v", err)
	}
	if pg, err := p.AllocPage(); pg != nil || !errors.Is(err, pool.ErrClosed) {
		t.Fatalf("AllocPage after Close: page %p, %v", pg, err)
	}
	if st := p.Stats(); st.MappedBytes != 0 || st.Arenas != 0 || st.Pages.Blocks != 0 {
		t.Fatalf("a closed pool mapped memory: %d bytes in %d arenas, %d pages", st.MappedBytes, st.Arenas, st.Pages.Blocks)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "closed pool") {
			t.Fatalf("NewCache on a closed pool: %v", r)
		}
	}()
	p.NewCache()
}

// TestReuseClearsSharedInfo checks that a buffer handed out again has a
// cleared shared info, whichever way its last user changed it: Reuse skips
// the clear only for a block nothing changed since its last allocation.
func TestReuseClearsSharedInfo(t *testing.T) {
	c := newPool(t, pool.Config{}).NewCache()
	defer c.Close()
	// fresh checks the four buffers the cache hands out next, the last
	// four freed.
	fresh := func(what string) {
		t.Helper()
		var xs [4]*skb.Buff
		for i := range xs {
			x, err := c.Alloc(1500)
			if err != nil {
				t.Fatal(err)
			}
			if x.IsGSO() || x.GSOSegs() != 0 || x.GSOType() != 0 || x.NrFrags() != 0 || x.Dataref() != 1 || x.Cloned() {
				t.Errorf("after %s: a fresh buffer has gso %d/%d/%v, %d frags, dataref %d",
					what, x.GSOSize(), x.GSOSegs(), x.GSOType(), x.NrFrags(), x.Dataref())
			}
			xs[i] = x
		}
		for i := len(xs) - 1; i >= 0; i-- {
			c.Free(xs[i])
		}
	}
	for _, tc := range []struct {
		name string
		use  func(x *skb.Buff)
	}{
		{"nothing", func(x *skb.Buff) {}},
		{"SetGSO", func(x *skb.Buff) { x.SetGSO(1400, 10, skb.GSOUDPL4) }},
		{"Clone", func(x *skb.Buff) {
			c.Free(c.Clone(x))
		}},
		{"Copy", func(x *skb.Buff) {
			x.SetGSO(1000, 3, skb.GSOTCPv4)
			y, err := x.Copy(c)
			if err != nil {
				t.Fatal(err)
			}
			c.Free(y)
			x.SetGSO(0, 0, 0)
		}},
		{"SetDestructor", func(x *skb.Buff) { x.SetDestructor(func(*skb.Buff) {}) }},
	} {
		x, err := c.Alloc(1500)
		if err != nil {
			t.Fatal(err)
		}
		x.Put(100)
		tc.use(x)
		c.Free(x)
		fresh(tc.name)
		fresh(tc.name + ", then nothing")
	}
}

// TestStatsExhausted checks that allocations a bounded class refuses count
// in Exhausted and not as cache misses: misses are the allocations that
// refilled the cache first, hits the others.
func TestStatsExhausted(t *testing.T) {
	p := newPool(t, pool.Config{Classes: []pool.Class{{Size: 512, Max: 32}}, CacheSize: 4})
	c := p.NewCache()
	defer c.Close()
	var bs []*skb.Buff
	for range 32 {
		b, err := c.Alloc(10)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	for range 100 {
		if _, err := c.Alloc(10); !errors.Is(err, pool.ErrExhausted) {
			t.Fatalf("alloc from an empty bounded class: %v", err)
		}
	}
	st := p.Stats().Classes[0]
	if st.Allocs != 32 || st.CacheMisses != 16 || st.CacheHits != 16 || st.Exhausted != 100 {
		t.Errorf("allocs %d, misses %d, hits %d, exhausted %d; want 32, 16, 16, 100", st.Allocs, st.CacheMisses, st.CacheHits, st.Exhausted)
	}
	c.FreeN(bs)
}

// TestNilAndBadIndex checks the edges of the API: freeing nil does
// nothing, as kfree_skb(NULL) does; a nil buffer is no pool's; an arena
// index outside the classes is the caller's bug and panics naming it.
func TestNilAndBadIndex(t *testing.T) {
	p := newPool(t, pool.Config{Debug: true})
	c := p.NewCache()
	c.Free(nil)
	c.FreeN([]*skb.Buff{nil, nil})
	var nb *skb.Buff
	nb.Free()
	if p.Owns(nil) {
		t.Error("Owns(nil)")
	}
	for _, i := range []int{-1, len(p.Classes())} {
		func() {
			defer func() {
				want := fmt.Sprintf("pool: arena of class %d: the pool has classes 0 to %d", i, len(p.Classes())-1)
				if r := recover(); fmt.Sprint(r) != want {
					t.Errorf("Arena(%d) recovered %v, want %q", i, r, want)
				}
			}()
			p.Arena(i)
		}()
	}
	c.Close()
	if st := p.Stats(); st.InFlight() != 0 {
		t.Errorf("in flight: %v", st)
	}
}

// TestAllocAfterPoolClose checks that a cache closed by its pool's Close
// says so when allocated from, naming the pool: the usual cause is a
// device left open on a pool closed before it.
func TestAllocAfterPoolClose(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "closed early"})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := fmt.Sprint(recover()); !strings.Contains(r, `its pool "closed early" was closed while the cache was in use`) {
				t.Errorf("allocation after Pool.Close recovered %q", r)
			}
		}()
		c.Alloc(10)
	}()
}

// TestUnnamedPoolLabel checks that a pool without a Name is named the same
// way, (unnamed), in a debug pool's double-free panic and in its leak
// report, and a named one by its quoted name.
func TestUnnamedPoolLabel(t *testing.T) {
	for _, tc := range []struct{ name, label string }{{"", "(unnamed)"}, {"rx ring", `"rx ring"`}} {
		p, err := pool.New(pool.Config{Name: tc.name, Debug: true})
		if err != nil {
			t.Fatal(err)
		}
		c := p.NewCache()
		b, _ := c.Alloc(10)
		c.Free(b)
		func() {
			defer func() {
				if r := fmt.Sprint(recover()); !strings.Contains(r, "of pool "+tc.label+"\n") {
					t.Errorf("double free of a buffer of pool %q: panic %q, want it to name pool %s", tc.name, r, tc.label)
				}
			}()
			c.Free(b)
		}()
		b, _ = c.Alloc(10)
		if err := p.Close(); !errors.Is(err, pool.ErrLeak) || !strings.Contains(err.Error(), "pool "+tc.label+":") {
			t.Errorf("leak report of pool %q: %v, want it to name pool %s", tc.name, err, tc.label)
		}
		b.Free()
		c.Close()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBoundedClassFlowsBack checks that blocks of a bounded class freed
// into one cache come back to another that allocates, as a forwarder's
// transmitting device frees what its receiving device allocated: the
// freeing cache must not sit on the class's blocks short of its
// CacheSize.
func TestBoundedClassFlowsBack(t *testing.T) {
	for _, max := range []int{2, 16, 200, 1000} {
		p := newPool(t, pool.Config{Classes: []pool.Class{{Size: 2048, Max: max}}})
		rx, tx := p.NewCache(), p.NewCache()
		bs := make([]*skb.Buff, min(64, max))
		for round := range 100 {
			n, err := rx.AllocN(bs, 100)
			if n == 0 {
				t.Fatalf("max %d, round %d: no buffer: %v", max, round, err)
			}
			tx.FreeN(bs[:n])
		}
		rx.Close()
		tx.Close()
	}
}

// TestDebugPoisonsPages checks that debug mode poisons a frag page when its
// last reference goes, as it poisons freed blocks: a stale frag then reads
// 0x6b, not the packet it held.
func TestDebugPoisonsPages(t *testing.T) {
	for _, debug := range []bool{false, true} {
		p := newPool(t, pool.Config{Debug: debug})
		pg, err := p.AllocPage()
		if err != nil {
			t.Fatal(err)
		}
		stale := pg.Bytes()
		for i := range stale {
			stale[i] = 'X'
		}
		pg.Put()
		if got, want := stale[len(stale)/2], byte('X'); debug {
			want = 0x6b
			if got != want || stale[0] != want || stale[len(stale)-1] != want {
				t.Errorf("debug pool: a freed page reads %#x %#x %#x; want 0x6b throughout", stale[0], got, stale[len(stale)-1])
			}
		} else if got != want {
			t.Errorf("pool without debug: a freed page reads %#x; want it left as it was (%#x): no poisoning cost", got, want)
		}
	}
}
