package pool_test

import (
	"testing"

	"github.com/skbdev/skb/pool"
)

func TestSmoke(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "smoke", Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	b, err := c.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	copy(b.Put(5), "hello")
	n := c.Clone(b)
	if n.Dataref() != 2 || string(n.Data()) != "hello" {
		t.Fatalf("clone: dataref %d data %q", n.Dataref(), n.Data())
	}
	if err := n.CowHead(c, 200); err != nil {
		t.Fatal(err)
	}
	copy(n.Push(3), "abc")
	if string(n.Data()) != "abchello" || string(b.Data()) != "hello" || n.Headroom() < 200 {
		t.Fatalf("cow: %q %q headroom %d", n.Data(), b.Data(), n.Headroom())
	}
	c.Free(n)
	c.Free(b)
	c.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
