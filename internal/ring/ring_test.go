package ring

import (
	"strings"
	"testing"
)

func TestLoadStore(t *testing.T) {
	b := make([]byte, 64) // make returns 8-byte aligned memory
	Store32(b, 8, 0xdeadbeef)
	if got := Load32(b, 8); got != 0xdeadbeef {
		t.Fatalf("Load32 = %#x, want 0xdeadbeef", got)
	}
	if got := Load32(b, 12); got != 0 {
		t.Fatalf("Load32 of a neighbour = %#x, want 0", got)
	}
}

func TestBadOffsetPanics(t *testing.T) {
	b := make([]byte, 16)
	for _, tc := range []struct {
		off  int
		want string
	}{{-4, "outside"}, {13, "outside"}, {16, "outside"}, {2, "aligned"}} {
		func() {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(string), tc.want) {
					t.Errorf("offset %d: panic %v, want one saying %q", tc.off, p, tc.want)
				}
			}()
			Load32(b, tc.off)
		}()
	}
}
