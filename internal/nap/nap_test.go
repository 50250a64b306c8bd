package nap

import (
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	// A raw nap may end early on a signal (the runtime's preemption
	// signal too): only the time.Sleep path is held to its length.
	for _, d := range []time.Duration{0, -time.Second, 30 * time.Microsecond, 2 * time.Millisecond} {
		t0 := time.Now()
		Sleep(d)
		got := time.Since(t0)
		if d > Max && got < d || got > max(d, 0)+time.Second {
			t.Errorf("Sleep(%v) returned after %v", d, got)
		}
	}
}

func TestSleepAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Sleep(time.Microsecond) }); n != 0 {
		t.Errorf("Sleep allocates %v times", n)
	}
}
