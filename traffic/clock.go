package traffic

import "time"

// clock is how the engines read time: monotonic time elapsed since the
// clock's start (time.Since, one vDSO read), and wall-clock time derived
// from it for the stamps. time.Now reads both the wall and the monotonic
// clock and cost about 70 ns on the machines skb was first measured on,
// against 25 ns for time.Since: read once per packet, it was a quarter of
// the generator's own cost. The wall time drifts from the system's only as
// far as the two clocks drift apart during a run (NTP slewing).
type clock struct {
	start time.Time
	wall0 int64 // start, ns since the Unix epoch
}

func newClock() clock {
	t := time.Now()
	return clock{start: t, wall0: t.UnixNano()}
}

// now returns the time elapsed since the clock's start.
func (c *clock) now() time.Duration { return time.Since(c.start) }

// wall returns the wall-clock time d after the clock's start, in ns since
// the Unix epoch (CLOCK_REALTIME).
func (c *clock) wall(d time.Duration) int64 { return c.wall0 + int64(d) }
