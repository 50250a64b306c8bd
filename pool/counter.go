//go:build !race

package pool

// counter is a statistics counter with one writer, the goroutine that owns the
// Cache. inc is a plain increment, no locked instruction; readers on other
// goroutines load a word-sized value, which the Go memory model lets them do
// without tearing. Under the race detector counter_race.go makes both atomic,
// so that the detector stays quiet about this deliberate benign race.
type counter struct{ v uint64 }

func (c *counter) inc()         { c.v++ }
func (c *counter) load() uint64 { return c.v }
