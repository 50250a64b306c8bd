package traffic

import (
	"runtime"
	"time"

	"github.com/skbdev/skb/netdev"
)

// soleP reports whether the process runs Go code on one P (GOMAXPROCS 1,
// as under taskset -c 0 or a one-CPU container). A goroutine spinning on
// an empty queue there keeps the P that its peer in the same process (the
// sender, echo server or ping-pong client at the other end of a memring
// or loopback pair) needs to make the queue non-empty, until the
// scheduler preempts it some 10 ms later: a ping-pong of 10 µs then takes
// tens of milliseconds a round trip. Spinning loops read it once at their
// start and, when it is true, yield the P (runtime.Gosched) after every
// yieldEvery empty Polls.
func soleP() bool { return runtime.GOMAXPROCS(0) < 2 }

// yieldEvery is how many empty Polls a spinning loop on the
// process's one P makes before it yields the P. A yield costs a pass of
// the scheduler (a few microseconds with its netpoll check): after every
// empty Poll it added 4 µs to the 8.6 µs p50 of a busy-polling ping-pong
// between two skb processes pinned to a CPU each (GOMAXPROCS 1 in both,
// no other goroutine to yield to); a UDP Poll costs about 0.6 µs, so a
// wait shorter than about 20 µs does not yield at all, while a memring
// peer in the same process (50 ns a Poll) gets the P every 2 µs or so.
const yieldEvery = 32

// busySlice is how long one BusyPoll of a spinning loop spins before the
// loop looks at the clock, its bounds and ctx (and, on the process's one
// P, yields it), for a device that busy-polls itself
// (netdev.BusyPoller). A spin that finds a packet returns at once; the
// slice only bounds one that finds none.
const busySlice = 50 * time.Microsecond

// busySliceSoleP is busySlice for a loop on the process's one P, which
// yields the P after each BusyPoll that found nothing: the shortest
// positive timeout, which the UDP driver spins as one probe and one round
// of 32 (about as long as the yieldEvery empty Polls a loop without
// BusyPoll makes between yields), so that a peer goroutine in the process
// waits no longer for the P than it did then. A UDP loopback ping-pong of
// two goroutines on one P measured p50 288-295 µs with busySlice, 83-88
// µs with this, and 88-120 µs for the loop of Polls.
const busySliceSoleP = time.Nanosecond

// spinSlice returns the BusyPoll timeout of a spinning loop: busySlice, or
// busySliceSoleP when the loop yields its P (soleP).
func spinSlice(yield bool) time.Duration {
	if yield {
		return busySliceSoleP
	}
	return busySlice
}

// busyPoller returns dev as a netdev.BusyPoller when spin is set and dev is
// one, else nil: a spinning loop then calls Poll itself.
func busyPoller(dev netdev.Device, spin bool) netdev.BusyPoller {
	if !spin {
		return nil
	}
	bp, _ := dev.(netdev.BusyPoller)
	return bp
}
