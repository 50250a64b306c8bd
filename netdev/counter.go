//go:build !race

package netdev

// add is a plain increment by the counters' single writer. Readers on other
// goroutines load word-sized values, which the Go memory model lets them do
// without tearing; counter_race.go makes both sides atomic under the race
// detector so that it stays quiet about this deliberate benign race.
func add(p *uint64, n uint64) { *p += n }

func (c *Counters) snapshot() Stats { return c.s }
