//go:build race

package pool

import "sync/atomic"

// counter: see counter.go. With the race detector on, both sides are atomic.
type counter struct{ v uint64 }

func (c *counter) inc()         { atomic.AddUint64(&c.v, 1) }
func (c *counter) load() uint64 { return atomic.LoadUint64(&c.v) }
