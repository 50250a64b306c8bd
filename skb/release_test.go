package skb_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// TestFragListClonesRace reallocates the heads of two clones of a buffer
// with a frag list on two goroutines, as the package allows: each clones
// the shared members (cloneList), which must only read their headers. The
// race detector (go test -race, as CI runs) reports it otherwise.
func TestFragListClonesRace(t *testing.T) {
	c := newCache(t, pool.Config{})
	p := c.Pool()
	for round := range 20 {
		b, _ := c.Alloc(100)
		b.Put(10)
		for range 50 {
			m, _ := c.Alloc(0)
			m.Put(1)[0] = byte(round)
			b.AddFragList(m)
		}
		x := c.Clone(b)
		c1, c2 := p.NewCache(), p.NewCache()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, w := range []struct {
			b  *skb.Buff
			cc *pool.Cache
		}{{b, c1}, {x, c2}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := w.b.Linearize(w.cc); err != nil {
					t.Error(err)
				}
				if w.b.Len() != 60 || w.b.Data()[59] != byte(round) {
					t.Errorf("round %d: %d bytes, last %d", round, w.b.Len(), w.b.Data()[w.b.Len()-1])
				}
				w.cc.Free(w.b)
				w.cc.Close()
			}()
		}
		close(start)
		wg.Wait()
	}
}

// TestDestructorSeesLiveBuffer checks that the destructor receives the data's
// last user live (its data readable, also under the skbdebug tag), and that
// freeing or cloning it there panics rather than recycling it twice.
func TestDestructorSeesLiveBuffer(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(100)
	copy(b.Put(10), "0123456789")
	var got string
	live := false
	b.SetDestructor(func(x *skb.Buff) {
		live = x.IsLive()
		got = string(x.Data())
		mustPanic(t, func() { x.Free() }, "inside its data's destructor")
		mustPanic(t, func() { x.Clone(c) }, "inside its data's destructor")
		// A destructor set now would stay on the block, for whichever
		// buffer gets it next.
		mustPanic(t, func() { x.SetDestructor(func(*skb.Buff) {}) }, "SetDestructor", "inside its data's destructor")
	})
	cl := c.Clone(b)
	c.Free(b) // not the last user: nothing runs
	if got != "" {
		t.Fatal("destructor ran before the last user was freed")
	}
	c.Free(cl)
	if !live || got != "0123456789" {
		t.Fatalf("destructor saw live %v data %q", live, got)
	}
	if cl.IsLive() {
		t.Fatal("buffer live after its free")
	}

	// The never-cloned path too.
	b, _ = c.Alloc(100)
	copy(b.Put(3), "abc")
	got = ""
	b.SetDestructor(func(x *skb.Buff) { got = string(x.Data()) })
	c.Free(b)
	if got != "abc" {
		t.Fatalf("destructor saw %q", got)
	}
}

// TestFragsCapped checks that Frags' slice cannot be appended into the
// shared info.
func TestFragsCapped(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(100)
	defer c.Free(b)
	pg, off, err := c.AllocFrag(10)
	if err != nil {
		t.Fatal(err)
	}
	b.AddRxFrag(pg, off, 10)
	if f := b.Frags(); len(f) != 1 || cap(f) != 1 {
		t.Fatalf("Frags len %d cap %d, want 1 and 1", len(f), cap(f))
	}
}

// TestDestructorNoRealloc checks that the destructor cannot reallocate the
// buffer it is given (a pull past its linear data would recycle the old
// block twice), and that a destructor run by a reallocation that dropped
// the data's last reference (Unshare of a buffer whose clone another
// goroutine freed meanwhile) also sees its buffer as Free's does: Clone
// panics there, and the buffer is usable after.
func TestDestructorNoRealloc(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(100)
	b.Put(10)
	pg, off, err := c.AllocFrag(1000)
	if err != nil {
		t.Fatal(err)
	}
	b.AddRxFrag(pg, off, 1000) // more than the 512-byte block's tailroom
	b.SetDestructor(func(x *skb.Buff) {
		mustPanic(t, func() { _ = x.PskbMayPull(c, 800) }, "reallocation", "inside its data's destructor")
	})
	c.Free(b)

	// A clone freed on another goroutine while Unshare copies b: when
	// the clone's free comes after Unshare found b shared, Unshare's
	// drop of the old block is the last and runs the destructor.
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	c2 := c.Pool().NewCache() // the other goroutine's
	defer c2.Close()
	hits := 0
	for i := 0; i < 5000 && hits < 10; i++ {
		b, _ := c.Alloc(8000)
		b.Put(8000)
		var inside *skb.Buff
		b.SetDestructor(func(x *skb.Buff) {
			if x != b {
				return // the clone's free ran it
			}
			hits++
			inside = x
			if x.Cloned() || x.Len() != 8000 {
				t.Errorf("destructor in Unshare saw cloned %v, %d bytes", x.Cloned(), x.Len())
			}
			mustPanic(t, func() { x.Clone(c) }, "inside its data's destructor")
		})
		x := c.Clone(b)
		var start atomic.Bool
		done := make(chan struct{})
		go func() {
			for !start.Load() {
			}
			c2.Free(x)
			close(done)
		}()
		start.Store(true)
		if err := b.Unshare(c); err != nil {
			t.Fatal(err)
		}
		<-done
		if inside != nil {
			b.Push(1) // private and live again after the destructor
		}
		c.Free(b)
	}
	t.Logf("the destructor ran inside Unshare %d times", hits)
}
