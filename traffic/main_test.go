package traffic

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the package when its tests leave goroutines behind (a sink
// of RunSinks, an echo server, a device's helper). Leaked buffers show up
// as an error from the Close of each test's devices, whose pools report
// them.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	// (Fuzzing leaves the fuzzing engine's signal goroutine behind.)
	if f := flag.Lookup("test.fuzz"); code == 0 && (f == nil || f.Value.String() == "") {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "traffic: %d goroutines left after the tests (%d before):\n%s\n", n, before, buf)
			code = 1
		}
	}
	os.Exit(code)
}
