// Package pooltest fails a test binary whose tests leak socket buffers.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { pooltest.Main(m) }
//
// After the tests pass, Main checks every pool of the process that was not
// closed cleanly (pool.CheckLeaks) and, when buffers or pages are still in
// flight, prints them (with allocation sites for pools in debug mode) and exits
// with status 1.
package pooltest

import (
	"fmt"
	"os"
	"testing"

	"github.com/skbdev/skb/pool"
)

// Main runs the tests, then fails the binary if any pool leaked buffers. It
// does not return.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := pool.CheckLeaks(); err != nil {
			fmt.Fprintf(os.Stderr, "pooltest: buffers leaked after the tests passed:\n%v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Check fails t when any pool has buffers or pages in flight. Call it at the
// end of a test, or from t.Cleanup, once the test has freed its buffers.
func Check(t testing.TB) {
	t.Helper()
	if err := pool.CheckLeaks(); err != nil {
		t.Fatal(err)
	}
}
