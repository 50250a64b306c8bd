//go:build race

package netdev

import "sync/atomic"

// add: see counter.go. With the race detector on, both sides are atomic.
func add(p *uint64, n uint64) { atomic.AddUint64(p, n) }

func (c *Counters) snapshot() Stats {
	var s Stats
	ld := func(p *uint64) uint64 { return atomic.LoadUint64(p) }
	s.RxPackets, s.RxBytes = ld(&c.s.RxPackets), ld(&c.s.RxBytes)
	s.RxCopybreak, s.RxTruncated = ld(&c.s.RxCopybreak), ld(&c.s.RxTruncated)
	s.TxPackets, s.TxBytes = ld(&c.s.TxPackets), ld(&c.s.TxBytes)
	s.TxDoorbells, s.TxRingFull = ld(&c.s.TxDoorbells), ld(&c.s.TxRingFull)
	for i := range s.RxDropped {
		s.RxDropped[i] = ld(&c.s.RxDropped[i])
		s.TxDropped[i] = ld(&c.s.TxDropped[i])
	}
	for i := range s.GSOFallback {
		s.GSOFallback[i] = ld(&c.s.GSOFallback[i])
	}
	return s
}
