//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// TestWaitOne checks Wait's receive of one datagram (rxq.waitOne): it
// starts after a batch wait that woke with one datagram; in it every
// datagram arrives in order with its source, one that does not fit is
// counted and dropped, a wait with nothing to receive times out; and a
// batch asked for every waitProbe-th wait brings a queue back to batches.
// It runs sleeping and keeping the P (KeepP).
func TestWaitOne(t *testing.T) {
	for _, keepP := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepp=%v", keepP), func(t *testing.T) {
			tx, rx := pair(t, lo4, Config{}, Config{RecvSize: 600, KeepP: keepP})
			var got []uint32
			var srcs []netip.AddrPort
			h := func(b *skb.Buff) {
				s, ok := checkPattern(b.Data())
				if !ok {
					t.Errorf("datagram %d corrupt", s)
				}
				got = append(got, s)
				srcs = append(srcs, rx.Src())
				rx.Cache().Free(b)
			}
			// waitPoll waits and polls once; Poll hands over what the
			// wait received without another call (none when it was
			// dropped).
			waitPoll := func() int {
				t.Helper()
				if err := rx.Wait(time.Second); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				n, err := rx.Poll(64, h)
				if err != nil {
					t.Fatalf("Poll after Wait: %v", err)
				}
				return n
			}
			send := func(seq uint32, size int) {
				t.Helper()
				if err := tx.Xmit(fill(t, tx, seq, size), false); err != nil {
					t.Fatal(err)
				}
			}
			send(0, 64)
			if n := waitPoll(); n != 1 || !rx.rx.waitOne {
				t.Fatalf("a batch wait that woke with one: %d handed over, waitOne %v", n, rx.rx.waitOne)
			}
			// One at a time, the one that does not fit dropped.
			rx.rx.waits = 0
			for i, n := range []int{100, 601, 600, 3000, 500} {
				send(uint32(1+i), n)
			}
			for range 5 {
				if n := waitPoll(); n > 1 {
					t.Fatalf("a wait for one handed over %d", n)
				}
			}
			if want := []uint32{0, 1, 3, 5}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			for _, s := range srcs {
				if s != tx.LocalAddr() {
					t.Fatalf("source %v, want %v", s, tx.LocalAddr())
				}
			}
			st := rx.Stats()
			if st.RxTruncated != 2 || st.RxDropped[netdev.DropTruncated] != 2 || st.RxPackets != 4 {
				t.Errorf("rx counters %+v", st)
			}
			// Nothing to receive: a timeout, not early.
			start := time.Now()
			if err := rx.Wait(20 * time.Millisecond); !errors.Is(err, netdev.ErrTimeout) {
				t.Fatalf("Wait on an empty socket: %v", err)
			}
			if d := time.Since(start); d < 20*time.Millisecond {
				t.Fatalf("Wait returned after %v, before its 20ms", d)
			}
			// A queue: the waits take one each until the batch probe,
			// which takes the rest and stays with batches.
			got = got[:0]
			rx.rx.waits = 0
			for i := range 40 {
				send(uint32(100+i), 64)
			}
			ones := 0
			for waitPoll() == 1 {
				ones++
			}
			if ones != waitProbe-1 || rx.rx.waitOne {
				t.Fatalf("%d waits took one before a batch (want %d), waitOne %v", ones, waitProbe-1, rx.rx.waitOne)
			}
			for len(got) < 40 {
				waitPoll()
			}
			for i, s := range got {
				if s != uint32(100+i) {
					t.Fatalf("order: got %v", got)
				}
			}
		})
	}
}

// TestWaitPrecise checks that Wait keeps a short timeout to within a few
// ms, where a receive timeout (SO_RCVTIMEO) alone ends one or two kernel
// ticks late (a Wait of 1 ms returned after 8 ms at HZ=250): the fastest
// of eight waits on an empty socket returns no sooner than its timeout and
// less than 3 ms after it, sleeping and keeping the P. A Wait in its
// ppoll(2) part still wakes for a datagram, which is then pending, and for
// Close; and a wait allocates nothing. The parts that race a sender or
// Close against a short Wait retry when the machine's load made the Wait
// end first.
func TestWaitPrecise(t *testing.T) {
	if s := sleepable(2 * tick); s != 0 {
		t.Fatalf("sleepable(%v) = %v, want 0: a Wait that short sleeps in ppoll alone", 2*tick, s)
	}
	for _, keepP := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepp=%v", keepP), func(t *testing.T) {
			tx, rx := pair(t, lo4, Config{}, Config{KeepP: keepP})
			// The first Wait, short enough to sleep in ppoll alone, posts
			// the receive buffers as one that sleeps in a receive does.
			if err := rx.Wait(time.Millisecond); !errors.Is(err, netdev.ErrTimeout) || rx.rx.posted != len(rx.rx.bufs) {
				t.Fatalf("a fresh device's Wait(1ms): %v, %d of %d slots posted; want ErrTimeout, all", err, rx.rx.posted, len(rx.rx.bufs))
			}
			for _, timeout := range []time.Duration{time.Microsecond, time.Millisecond, 3 * time.Millisecond, 3*tick + 500*time.Microsecond, 20 * time.Millisecond} {
				// Up to twenty tries, ended by the first in time: late by
				// the code, every one is; late by a loaded machine's
				// stalls, only some.
				fastest, tries := time.Hour, 0
				for ; tries < 20 && fastest > timeout+3*time.Millisecond; tries++ {
					start := time.Now()
					err := rx.Wait(timeout)
					el := time.Since(start)
					if !errors.Is(err, netdev.ErrTimeout) {
						t.Fatalf("Wait(%v) on an empty socket: %v", timeout, err)
					}
					if el < timeout {
						t.Fatalf("Wait(%v) returned after %v, before its timeout", timeout, el)
					}
					fastest = min(fastest, el)
				}
				if fastest > timeout+3*time.Millisecond {
					t.Errorf("Wait(%v): the fastest of %d returned after %v (the kernel's tick is %v)", timeout, tries, fastest, tick)
				}
			}

			got := 0
			h := func(b *skb.Buff) {
				if s, ok := checkPattern(b.Data()); !ok || s != 9 {
					t.Errorf("datagram %d, intact %v", s, ok)
				}
				got++
				rx.Cache().Free(b)
			}
			// A datagram sent while Wait sleeps in ppoll wakes it.
			woke := false
			for try := 0; try < 20 && !woke; try++ {
				b := fill(t, tx, 9, 64)
				sent := make(chan error, 1)
				go func() {
					time.Sleep(tick / 4)
					sent <- tx.Xmit(b, false)
				}()
				err := rx.Wait(2 * tick)
				if serr := <-sent; serr != nil {
					t.Fatalf("Xmit: %v", serr)
				}
				switch {
				case err == nil:
					woke = true
				case errors.Is(err, netdev.ErrTimeout):
					// The sender ran late: take its datagram, try again.
					if err := rx.Wait(5 * time.Second); err != nil {
						t.Fatalf("Wait for a datagram sent: %v", err)
					}
				default:
					t.Fatalf("Wait with a datagram sent during it: %v", err)
				}
				if n, err := rx.Poll(64, h); err != nil || n != 1 {
					t.Fatalf("Poll after Wait: %d, %v", n, err)
				}
			}
			if !woke {
				t.Errorf("in 20 tries no datagram came within a Wait of %v, %v after it began", 2*tick, tick/4)
			}

			// No allocation: a wait that finds a datagram queued, and one
			// in ppoll that times out.
			allocs := testing.AllocsPerRun(20, func() {
				sendRun(t, tx, 9, 1, 64)
				if err := rx.Wait(5 * time.Second); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				if _, err := rx.Poll(64, h); err != nil {
					t.Fatal(err)
				}
				if err := rx.Wait(100 * time.Microsecond); !errors.Is(err, netdev.ErrTimeout) {
					t.Fatalf("Wait on an empty socket: %v", err)
				}
			})
			if allocs != 0 {
				t.Errorf("%.1f allocations per wait", allocs)
			}

			// Close wakes a Wait in ppoll: on a device of its own each try
			// (sharing rx's pool, so that Close has no pool to unmap), at
			// least one of twenty Waits of two ticks, closed a quarter of a
			// tick in, returns before its timeout would have ended it. A
			// ppoll that Close did not wake would fail every try.
			woken := false
			for try := 0; try < 20 && !woken; try++ {
				d := openT(t, Config{Config: netdev.Config{Pool: rx.Pool()}, Local: lo4, KeepP: keepP})
				type result struct {
					err        error
					start, end time.Time
				}
				done := make(chan result, 1)
				go func() {
					start := time.Now()
					err := d.Wait(2 * tick)
					done <- result{err, start, time.Now()}
				}()
				time.Sleep(tick / 4)
				d.Close()
				r := <-done
				if !errors.Is(r.err, net.ErrClosed) && !errors.Is(r.err, netdev.ErrTimeout) {
					t.Fatalf("Wait when Close came: %v", r.err)
				}
				woken = errors.Is(r.err, net.ErrClosed) && r.end.Sub(r.start) < 2*tick
			}
			if !woken {
				t.Errorf("in 20 tries Close never ended a Wait of %v before its timeout", 2*tick)
			}
		})
	}
}
