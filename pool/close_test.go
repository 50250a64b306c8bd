package pool_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/pool"
)

// TestAllocCloseRace closes a pool while goroutines allocate from it and
// write into what they get: each Alloc either returns ErrClosed or a
// buffer whose memory stays mapped (Close then reports it in flight until
// it is freed). Before Alloc counted itself first, Close could unmap the
// arena under a buffer just taken, and the write faulted.
func TestAllocCloseRace(t *testing.T) {
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); {
		p, err := pool.New(pool.Config{Classes: []pool.Class{{Size: 2048}}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Alloc(10) // the first arena
		if err != nil {
			t.Fatal(err)
		}
		b.Free()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					b, err := p.Alloc(100)
					if err != nil {
						if !errors.Is(err, pool.ErrClosed) {
							t.Error(err)
						}
						return
					}
					clear(b.Put(100))
					b.Free()
				}
			}()
		}
		close(start)
		for {
			err := p.Close()
			if err == nil {
				break
			}
			if !errors.Is(err, pool.ErrLeak) {
				t.Fatalf("Close: %v; want nil, or ErrLeak while an Alloc is under way", err)
			}
		}
		wg.Wait()
	}
}

// TestConcurrentClose closes a pool with an open Cache from two
// goroutines at once: one Close closes the cache and unmaps, the other
// returns ErrClosed, and the counters count the one allocation once.
func TestConcurrentClose(t *testing.T) {
	for range 200 {
		p, err := pool.New(pool.Config{Classes: []pool.Class{{Size: 2048, Max: 64}}, CacheSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		c := p.NewCache()
		b, err := c.Alloc(10)
		if err != nil {
			t.Fatal(err)
		}
		c.Free(b) // the cache holds free blocks
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = p.Close() }()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errs[0], pool.ErrClosed) && !errors.Is(errs[1], pool.ErrClosed) {
			t.Fatalf("two Closes at once returned %v; want nil and ErrClosed", errs)
		}
		if st := p.Stats(); st.InFlight() != 0 || st.Classes[0].Allocs != 1 {
			t.Fatalf("after two Closes at once:\n%s", st)
		}
	}
}

// TestCheckLeaksWhileInUse runs CheckLeaks while another goroutine
// allocates, writes and frees on a debug pool, and carves page fragments:
// the report reads nothing of the buffers or the cache, which belong to
// their holder (under -race a read of one is a data race; under skbdebug a
// freed buffer's panics).
func TestCheckLeaksWhileInUse(t *testing.T) {
	p, err := pool.New(pool.Config{Debug: true, Name: "in use"})
	if err != nil {
		t.Fatal(err)
	}
	stop := onCache(t, p, func(c *pool.Cache) error {
		b, err := c.Alloc(100)
		if err != nil {
			return err
		}
		b.Put(10)
		c.Free(b)
		// A fragment of a page the cache carves, and changes.
		pg, _, err := c.AllocFrag(1000)
		if err != nil {
			return err
		}
		pg.Put()
		return nil
	})
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		if err := pool.CheckLeaks(); err != nil && !errors.Is(err, pool.ErrLeak) {
			t.Fatal(err)
		}
	}
	stop()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// onCache runs step over and over on a goroutine of its own, with a Cache
// of p that the goroutine owns, until the returned stop is called (which
// waits for it, the cache closed) or step fails the test with its error.
func onCache(t *testing.T, p *pool.Pool, step func(*pool.Cache) error) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := p.NewCache()
		defer c.Close()
		for {
			select {
			case <-quit:
				return
			default:
			}
			if err := step(c); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// TestCacheClassInsideStep checks the Cache's class lookup against the
// Pool's for class sizes that are not multiples of 32 (the lookup table's
// step): each size gets the smallest class that fits, as Pool.Alloc
// gives, and a size that fits the largest class is not refused.
func TestCacheClassInsideStep(t *testing.T) {
	p, err := pool.New(pool.Config{Classes: []pool.Class{{Size: 100}, {Size: 1000}, {Size: 1642}}, Headroom: pool.NoHeadroom})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	for _, n := range []int{0, 1, 96, 97, 100, 101, 990, 1000, 1001, 1641, 1642} {
		pb, err := p.Alloc(n)
		if err != nil {
			t.Fatalf("Pool.Alloc(%d): %v", n, err)
		}
		cb, err := c.Alloc(n)
		if err != nil {
			t.Fatalf("Cache.Alloc(%d): %v; Pool.Alloc gave a tailroom of %d", n, err, pb.Tailroom())
		}
		if pb.Tailroom() != cb.Tailroom() {
			t.Errorf("size %d: Cache.Alloc tailroom %d, Pool.Alloc %d", n, cb.Tailroom(), pb.Tailroom())
		}
		pb.Free()
		c.Free(cb)
		s, err := c.AllocShared(n)
		if err != nil {
			t.Fatalf("Cache.AllocShared(%d): %v", n, err)
		}
		c.RecycleShared(s)
	}
	if _, err := c.Alloc(1643); !errors.Is(err, pool.ErrTooBig) {
		t.Errorf("Cache.Alloc(1643): %v; want ErrTooBig", err)
	}
	c.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFailedAllocNotCounted holds the one block of a bounded class while
// two goroutines keep failing to allocate another: the counters say one
// block in flight at every look, and Close's leak report says one.
func TestFailedAllocNotCounted(t *testing.T) {
	p, err := pool.New(pool.Config{Classes: []pool.Class{{Size: 2048, Max: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	held, err := p.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if b, err := p.Alloc(10); err == nil {
					b.Free()
					t.Error("an Alloc from an exhausted class succeeded")
					return
				} else if !errors.Is(err, pool.ErrExhausted) && !errors.Is(err, pool.ErrClosed) {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 20000 {
		if st := p.Stats(); st.Classes[0].InFlight != 1 {
			t.Fatalf("one block held: in flight %d", st.Classes[0].InFlight)
		}
	}
	if err := p.Close(); !errors.Is(err, pool.ErrLeak) || !strings.Contains(err.Error(), " 1 block of 2048 bytes; 1 buffer") {
		t.Errorf("Close with one block held: %v; want ErrLeak naming 1 block and 1 buffer", err)
	}
	stop.Store(true)
	wg.Wait()
	held.Free()
	if err := p.Close(); err != nil {
		t.Errorf("Close once the block came back: %v", err)
	}
}

// TestLeakReportWhileCarving runs CheckLeaks while a cache carves a new
// page per fragment and drops it: no page is ever leaked, and the report
// never says one is (nor a negative number).
func TestLeakReportWhileCarving(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "carving", PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	stop := onCache(t, p, func(c *pool.Cache) error {
		pg, _, err := c.AllocFrag(4096) // the whole page: a new one each time
		if err != nil {
			return err
		}
		pg.Put()
		return nil
	})
	bad := 0
	var first error
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		// Another test's pool may be reported too: this one's line only.
		if err := pool.CheckLeaks(); err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if strings.Contains(l, `pool "carving"`) {
					if bad++; first == nil {
						first = errors.New(l)
					}
				}
			}
		}
	}
	stop()
	if bad > 0 {
		t.Errorf("%d reports of pages in flight with none leaked, the first: %v", bad, first)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
