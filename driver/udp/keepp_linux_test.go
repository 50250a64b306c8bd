//go:build linux

package udp

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// TestKeepPTimeout waits on an idle KeepP device with GOMAXPROCS=1 beside
// a goroutine that never blocks: the runtime preempts the waiting receive
// every 10 ms to run it, and Wait must still end at its timeout, neither
// before (each interruption resumes with what is left) nor long after (a
// resumed receive that slept the whole timeout again would never end).
func TestKeepPTimeout(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	d := openT(t, Config{Local: lo4, KeepP: true})
	var spins atomic.Int64
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			spins.Add(1)
		}
	}()
	defer func() { stop.Store(true); <-done }()
	runtime.Gosched() // let the spinner start
	const timeout = 200 * time.Millisecond
	before := spins.Load()
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- d.Wait(timeout) }()
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * timeout):
		d.Close() // wakes it
		t.Fatalf("Wait(%v) on an idle socket had not returned after %v", timeout, 10*timeout)
	}
	el := time.Since(start)
	if err != netdev.ErrTimeout {
		t.Fatalf("Wait(%v) on an idle socket: %v", timeout, err)
	}
	if el < timeout || el > timeout+300*time.Millisecond {
		t.Errorf("Wait(%v) took %v", timeout, el)
	}
	if spins.Load() == before {
		t.Error("the other goroutine never ran while Wait slept: the P was not let go")
	}
}

// TestKeepPStopTheWorld runs the garbage collector while a KeepP Wait
// without a timeout sleeps on another goroutine: stopping the world must
// interrupt the receive (a signal, and the receive timeout that makes the
// kernel end the call rather than restart it) instead of waiting for a
// datagram; the Wait then goes on sleeping and takes the datagram sent
// after. Without the receive timeout the test process hangs with its
// world stopped, until the go command's own timeout kills it.
func TestKeepPStopTheWorld(t *testing.T) {
	tx, rx := pair(t, lo4, Config{}, Config{KeepP: true})
	errc := make(chan error, 1)
	go func() { errc <- rx.Wait(-1) }()
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	runtime.GC()
	if el := time.Since(start); el > heldSlice/2 {
		t.Errorf("runtime.GC took %v while Wait slept: the stop of the world waited for the receive", el)
	}
	select {
	case err := <-errc:
		t.Fatalf("Wait returned %v with nothing sent", err)
	case <-time.After(20 * time.Millisecond):
	}
	sendRun(t, tx, 7, 1, 64)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Wait did not return after a datagram came")
	}
	got := 0
	if _, err := rx.Poll(64, func(b *skb.Buff) {
		if s, ok := checkPattern(b.Data()); !ok || s != 7 {
			t.Errorf("datagram %d, intact %v", s, ok)
		}
		got++
		rx.Cache().Free(b)
	}); err != nil || got != 1 {
		t.Fatalf("Poll: %d datagrams, %v", got, err)
	}
}
