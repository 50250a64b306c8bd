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
	// Metadata, headers, checksum and GSO state, frags: every accessor.
	for name, f := range map[string]func(){
		"Headroom":           func() { _ = b.Headroom() },
		"Tailroom":           func() { _ = b.Tailroom() },
		"CB":                 func() { b.CB()[0] = 1 },
		"SetMark":            func() { b.SetMark(1) },
		"SetProtocol":        func() { b.SetProtocol(0x0800) },
		"NetworkHeader":      func() { _ = b.NetworkHeader() },
		"SetNetworkHeader":   func() { b.SetNetworkHeader(0) },
		"SetChecksumPartial": func() { _ = b.SetChecksumPartial(0, 0) },
		"SetGSO":             func() { b.SetGSO(100, 2, 0) },
		"SetDestructor":      func() { b.SetDestructor(nil) },
		"NrFrags":            func() { _ = b.NrFrags() },
	} {
		t.Run(name, func(t *testing.T) { mustPanic(t, f, "use after free") })
	}
	pg, off, err := c.AllocFrag(10)
	if err != nil {
		t.Fatal(err)
	}
	mustPanic(t, func() { b.AddRxFrag(pg, off, 10) }, "use after free")
	pg.Put() // not taken by the freed buffer
}
