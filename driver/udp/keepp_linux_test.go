//go:build linux

package udp

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	// Sleeps long enough that only the signal can end one in time.
	defer func(s time.Duration) { heldSlice = s }(heldSlice)
	heldSlice = 5 * time.Second
	errc := make(chan error, 1)
	go func() { errc <- rx.Wait(-1) }()
	defer rx.Close() // ends the Wait on a failure
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	runtime.GC()
	if el := time.Since(start); el > time.Second {
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

// keepPChild names the environment variable that makes
// TestKeepPNoPreemptSignal run its child part: the settings it tries
// cannot be undone in the process that makes them.
const keepPChild = "SKB_KEEPP_TEST_CHILD"

// TestKeepPNoPreemptSignal runs, each in a process of its own, a program
// whose runtime sends no preemption signal: GODEBUG=asyncpreemptoff=1, or
// SIGURG ignored (signal.Ignore), before Open, where Open leaves KeepP off,
// and SIGURG ignored after Open, where only the end of each sleep
// (heldSlice) lets the world stop. In each a garbage collection runs
// while Wait sleeps without a timeout, and must not wait for it.
func TestKeepPNoPreemptSignal(t *testing.T) {
	if mode := os.Getenv(keepPChild); mode != "" {
		keepPNoPreempt(t, mode)
		return
	}
	for _, mode := range []string{"asyncpreemptoff", "ignore-sigurg", "ignore-sigurg-after-open"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestKeepPNoPreemptSignal$", "-test.v", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), keepPChild+"="+mode)
			if mode == "asyncpreemptoff" {
				cmd.Env = append(cmd.Env, "GODEBUG=asyncpreemptoff=1")
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", mode, err, out)
			}
		})
	}
}

// keepPNoPreempt is TestKeepPNoPreemptSignal's child part.
func keepPNoPreempt(t *testing.T, mode string) {
	if mode == "ignore-sigurg" {
		signal.Ignore(unix.SIGURG)
	}
	d := openT(t, Config{Local: lo4, KeepP: true})
	if want := mode == "ignore-sigurg-after-open"; d.KeepP() != want {
		t.Fatalf("%s: KeepP() = %v, want %v", mode, d.KeepP(), want)
	}
	if mode == "ignore-sigurg-after-open" {
		signal.Ignore(unix.SIGURG)
	}
	errc := make(chan error, 1)
	go func() { errc <- d.Wait(-1) }()
	time.Sleep(30 * time.Millisecond)
	start := time.Now()
	runtime.GC()
	el := time.Since(start)
	if err := d.Close(); err != nil {
		t.Error(err)
	}
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Errorf("%s: Wait: %v", mode, err)
	}
	if el > 500*time.Millisecond {
		t.Errorf("%s: runtime.GC took %v while Wait(-1) slept: the stop of the world waited for the receive", mode, el)
	}
}
