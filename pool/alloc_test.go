package pool_test

import (
	"testing"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// TestZeroAllocs asserts that the steady-state buffer operations allocate
// nothing on the Go heap.
func TestZeroAllocs(t *testing.T) {
	p := newPool(t, pool.Config{})
	c := p.NewCache()
	defer c.Close()
	x, _ := c.Alloc(1500)
	x.Put(1000)
	defer c.Free(x)
	bs := make([]*skb.Buff, 64)
	tests := []struct {
		name string
		f    func()
	}{
		{"alloc/free", func() {
			b, err := c.Alloc(1500)
			if err != nil {
				t.Fatal(err)
			}
			c.Free(b)
		}},
		{"clone/free", func() { c.Free(c.Clone(x)) }},
		{"skb clone/free", func() {
			n, err := x.Clone(c)
			if err != nil {
				t.Fatal(err)
			}
			c.Free(n)
		}},
		{"push/pull", func() {
			x.Push(42)[0] = 1
			x.Pull(42)
		}},
		{"bulk alloc/free", func() {
			if _, err := c.AllocN(bs, 1500); err != nil {
				t.Fatal(err)
			}
			c.FreeN(bs)
		}},
		{"copy/free", func() {
			n, err := x.Copy(c)
			if err != nil {
				t.Fatal(err)
			}
			c.Free(n)
		}},
		{"cow_head/free", func() {
			n := c.Clone(x)
			if err := n.CowHead(c, 300); err != nil {
				t.Fatal(err)
			}
			c.Free(n)
		}},
		{"frag alloc/free", func() {
			b, _ := c.Alloc(0)
			pg, off, err := c.AllocFrag(1000)
			if err != nil {
				t.Fatal(err)
			}
			b.AddRxFrag(pg, off, 1000)
			c.Free(b)
		}},
	}
	for _, tt := range tests {
		tt.f() // warm the caches
		if n := testing.AllocsPerRun(1000, tt.f); n != 0 {
			t.Errorf("%s: %v allocations per run", tt.name, n)
		}
	}
}
