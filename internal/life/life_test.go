package life

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestReaders checks that a reader enters only while the device is open,
// and that Wait returns once the readers in have left, not before.
func TestReaders(t *testing.T) {
	var r Readers
	var closed atomic.Bool
	isClosed := closed.Load
	if !r.Enter(isClosed) {
		t.Fatal("Enter on an open device reported false")
	}
	closed.Store(true)
	if r.Enter(isClosed) {
		t.Fatal("Enter on a closed device reported true")
	}
	var left atomic.Bool
	go func() {
		time.Sleep(20 * time.Millisecond)
		left.Store(true)
		r.Exit()
	}()
	r.Wait()
	if !left.Load() {
		t.Fatal("Wait returned with a reader in")
	}
	r.Wait() // none in: at once
}
