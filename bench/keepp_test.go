package bench

import (
	"runtime"
	"testing"
)

// TestKeepPNeedsTwoPs checks that the bench's receivers keep their P only
// where the sender in the same process has another to run on.
func TestKeepPNeedsTwoPs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if keepP() {
		t.Error("keepP with GOMAXPROCS=1: a sleeping receiver would hold the sender's only P")
	}
	runtime.GOMAXPROCS(2)
	if !keepP() {
		t.Error("no keepP with GOMAXPROCS=2")
	}
}
