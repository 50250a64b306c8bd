package skb_test

import (
	"testing"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/pool/pooltest"
)

func TestMain(m *testing.M) { pooltest.Main(m) }

// newCache returns a cache of a fresh debug pool, closed (and checked for
// leaks) when the test ends.
func newCache(t testing.TB, cfg pool.Config) *pool.Cache {
	t.Helper()
	cfg.Debug = true
	if cfg.Name == "" {
		cfg.Name = t.Name()
	}
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	t.Cleanup(func() {
		c.Close()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}
