package bench

import (
	"testing"

	"github.com/skbdev/skb/pool/pooltest"
)

// TestMain fails the package when a run leaves buffers of any pool in
// flight: every run must give back what it allocated, also on its error
// paths.
func TestMain(m *testing.M) { pooltest.Main(m) }
