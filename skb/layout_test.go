package skb

import (
	"testing"
	"unsafe"
)

// TestLayout checks the cache-line layout the receive paths count on: a
// header of three whole lines whose first line holds the fields every
// allocation, free and data access reads, and a shared info of whole lines
// whose first line holds those of a plain buffer's allocation and free.
func TestLayout(t *testing.T) {
	const line = 64
	var b Buff
	var s Shared
	if n := unsafe.Sizeof(b); n != 3*line {
		t.Errorf("Buff is %d bytes, want %d", n, 3*line)
	}
	if n := unsafe.Sizeof(s); n%line != 0 {
		t.Errorf("Shared is %d bytes, not whole %d-byte lines", n, line)
	}
	for name, end := range map[string]uintptr{
		"Buff.home":      unsafe.Offsetof(b.home) + unsafe.Sizeof(b.home),
		"Shared.addr":    unsafe.Offsetof(s.addr) + unsafe.Sizeof(s.addr),
		"Shared.dataref": unsafe.Offsetof(s.dataref) + unsafe.Sizeof(s.dataref),
		"Shared.home":    unsafe.Offsetof(s.home) + unsafe.Sizeof(s.home),
	} {
		if end > line {
			t.Errorf("%s ends at byte %d, past the first cache line", name, end)
		}
	}
	if off, end := unsafe.Offsetof(b.m), unsafe.Offsetof(b.m)+unsafe.Sizeof(b.m); off < line || end > 2*line {
		t.Errorf("Buff.m spans bytes %d-%d, want it inside the second line", off, end)
	}
}
