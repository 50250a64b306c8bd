//go:build linux

package afxdp

import (
	"testing"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// TestHeadAddr checks that headAddr, which the fill ring's refill uses,
// agrees with HeadAddr for every frame of a UMEM pool.
func TestHeadAddr(t *testing.T) {
	p, err := pool.New(pool.Config{Classes: []pool.Class{{Size: 2048, Max: 64, Contiguous: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := p.NewCache()
	defer c.Close()
	d := &Device{umemBase: baseOf(p.Arena(0).Bytes())}
	bufs := make([]*skb.Buff, 64)
	if n, err := c.AllocN(bufs, 100); n != len(bufs) {
		t.Fatalf("AllocN: %d, %v", n, err)
	}
	for _, b := range bufs {
		if got, want := d.headAddr(b), b.HeadAddr(); got != want {
			t.Fatalf("headAddr %d, HeadAddr %d", got, want)
		}
	}
	c.FreeN(bufs)
}
