//go:build skbdebug

package skb_test

import (
	"testing"

	"github.com/skbdev/skb/pool"
)

// TestUseAfterFree needs the skbdebug build tag, which compiles the liveness
// check into every operation: go test -tags skbdebug ./skb
func TestUseAfterFree(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(10)
	c.Free(b)
	mustPanic(t, func() { b.Put(1) }, "use after free", "allocated at:", "TestUseAfterFree", "freed at:")
	mustPanic(t, func() { b.Clone(c) }, "use after free")
	mustPanic(t, func() { b.Pull(0) }, "use after free")
	mustPanic(t, func() { _ = b.Data() }, "use after free")
	mustPanic(t, func() { _ = b.Len() }, "use after free")
	mustPanic(t, func() { c.Clone(b) }, "use after free")
}
