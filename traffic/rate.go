package traffic

import (
	"math"
	"time"
)

// pacerDepth is the token bucket's depth in time (at least, see wait):
// after a late wake-up the generator may send up to this much of its rate
// back to back to catch up, and no more. A sleeping thread on a busy virtual machine wakes
// milliseconds late now and then; a shallower bucket would lose that time
// and undershoot the rate.
const pacerDepth = 10 * time.Millisecond

// pacerMinSleep is the shortest wait worth a sleep: under it the burst goes
// out at once and the debt is paid by the next wait.
const pacerMinSleep = 2 * time.Microsecond

// pacer is a token bucket in virtual-time form (the generic cell rate
// algorithm of ITU-T I.371): tat is when the bucket will have paid for
// everything sent so far, as time since the clock's start. A burst waits
// until tat, then pushes tat on by its cost. Waiting is a sleep, never a
// spin: a late wake-up leaves tat behind the clock, and the bursts that
// follow go out at once until it has caught up, up to pacerDepth of
// credit. So the average rate is exact and no core is kept busy, at the
// price of micro-bursts as long as the wake-up latency (tens of
// microseconds of timer slack, more when the machine is busy).
type pacer struct {
	perPacket float64 // ns per packet; 0: no limit
	tat       time.Duration
}

func newPacer(rate float64) pacer {
	if rate <= 0 {
		return pacer{}
	}
	return pacer{perPacket: 1e9 / rate}
}

// pacerSlice is the longest one wait of the pacer sleeps when the run can
// be stopped (a ctx): it then looks at ctx again.
const pacerSlice = 20 * time.Millisecond

// wait blocks until n more packets may be sent (true), or until wake if
// that comes first (false: nothing may be sent yet; the caller does what
// wake was for, such as an interval line, the end of the run or a look at
// ctx, and waits again). Both times are on clock c; it returns the time
// after the wait (now when it did not wait).
func (p *pacer) wait(c *clock, now time.Duration, n int, wake time.Duration) (time.Duration, bool) {
	if p.perPacket == 0 {
		return now, true
	}
	p.tat = max(p.tat, now-p.depth(n))
	if d := p.tat - now; d >= pacerMinSleep {
		if wake-now < d {
			sleep(max(wake-now, 0))
			return c.now(), false
		}
		sleep(d)
		now = c.now()
	}
	// A rate so low that the cost passes the largest Duration (292 years)
	// saturates, rather than wrap round to a time long past.
	if cost := float64(n) * p.perPacket; cost < float64(math.MaxInt64-p.tat) {
		// Rounded up: a cost cut to whole ns on every burst would let
		// the run drift over the rate (a packet in two seconds at
		// 123456 pps, 8100.05 ns each).
		p.tat += time.Duration(math.Ceil(cost))
	} else {
		p.tat = math.MaxInt64
	}
	return now, true
}

// depth returns the bucket's depth for bursts of n packets: pacerDepth, or
// one burst's cost when that is more, up to a second (64 datagrams at 1000
// pps cost 64 ms: a wake-up later than a shallower depth would lose time
// at every burst, and a loaded machine wakes that late).
func (p *pacer) depth(n int) time.Duration {
	if c := float64(n) * p.perPacket; c > float64(pacerDepth) {
		return time.Duration(min(c, float64(time.Second)))
	}
	return pacerDepth
}

// due returns how many packets may still go out before deadline: those
// whose slot in the bucket starts before it, at most want. A burst cut to
// it keeps a rate-limited run of duration D at rate R from sending more
// than R x D (plus one), whatever the burst size; with no limit it is want.
func (p *pacer) due(want int, deadline time.Duration) int {
	if p.perPacket == 0 {
		return want
	}
	if p.tat >= deadline {
		// No slot left before the end; a wait too short to sleep
		// (pacerMinSleep) would otherwise send the whole burst.
		return min(want, 1)
	}
	n := math.Ceil(float64(deadline-p.tat) / p.perPacket)
	return int(min(float64(want), max(n, 1)))
}
