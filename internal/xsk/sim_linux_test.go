package xsk

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSim drives a simulated socket's fill and rx rings past their size:
// the kernel side takes fill entries in the order they were produced, never
// more than were submitted, and produces no more rx descriptors than the
// ring has room for; user space sees exactly what it produced.
func TestSim(t *testing.T) {
	s, k := NewSim(8, 8, 4, 0)
	if s.FD() != -1 || s.TX.Size() != 0 || s.RX.Size() != 4 {
		t.Fatalf("fd %d, tx ring %d, rx ring %d", s.FD(), s.TX.Size(), s.RX.Size())
	}
	addrs := make([]uint64, 8)
	next := uint64(0)
	for round := range 10 {
		n := s.Fill.Free(3)
		for i := range n {
			s.Fill.Addrs[s.Fill.Index(i)] = next + uint64(i)
		}
		s.Fill.Produce(n)
		if got := k.TakeFill(addrs); got != 0 {
			t.Fatalf("round %d: kernel took %d entries before Submit", round, got)
		}
		s.Fill.Submit()
		got := k.TakeFill(addrs)
		if got != int(n) {
			t.Fatalf("round %d: kernel took %d entries, want %d", round, got, n)
		}
		descs := make([]unix.XDPDesc, got)
		for i := range got {
			if addrs[i] != next+uint64(i) {
				t.Fatalf("round %d: entry %d is %d, want %d", round, i, addrs[i], next+uint64(i))
			}
			descs[i] = unix.XDPDesc{Addr: addrs[i], Len: 60}
		}
		next += uint64(got)
		if put := k.PutRx(descs); put != got || k.Pending() != got {
			t.Fatalf("round %d: put %d rx descriptors, %d pending, want %d", round, put, k.Pending(), got)
		}
		m := s.RX.Peek(8)
		for i := range m {
			if d := s.RX.Descs[s.RX.Index(i)]; d != descs[i] {
				t.Fatalf("round %d: rx descriptor %d is %+v, want %+v", round, i, d, descs[i])
			}
		}
		s.RX.Consume(m)
		s.RX.Release()
		if k.Pending() != 0 {
			t.Fatalf("round %d: %d pending after release", round, k.Pending())
		}
	}
	// A full rx ring takes no more.
	full := make([]unix.XDPDesc, 6)
	if put := k.PutRx(full); put != 4 {
		t.Fatalf("put %d descriptors into a ring of 4", put)
	}
	if put := k.PutRx(full); put != 0 {
		t.Fatalf("put %d descriptors into a full ring", put)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
