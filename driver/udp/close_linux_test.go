//go:build linux

package udp

import (
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// TestCloseDuringReceiveCounts closes a receiver while a Poll or a Wait
// takes in a batch of long datagrams: every datagram sent is then handed
// over, counted in rx_dropped_closed, or still in the socket (read through
// a duplicate of its descriptor), never lost uncounted.
func TestCloseDuringReceiveCounts(t *testing.T) {
	const n, size = 64, 60000
	for round := range 20 {
		wait := round%2 == 1
		tx, rx := pair(t, lo4, Config{}, Config{RecvSize: MaxDatagram4, RcvBuf: 64 << 20})
		dup, err := unix.Dup(rx.Fd())
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := tx.Xmit(fill(t, tx, uint32(i), size), i < n-1); err != nil {
				t.Fatal(err)
			}
		}
		tx.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if wait && rx.Wait(-1) != nil {
				return
			}
			rx.Poll(n, func(b *skb.Buff) { b.Free() })
		}()
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
		rx.Close()
		<-done
		left := 0
		buf := make([]byte, 1<<16)
		for {
			if _, _, err := unix.Recvfrom(dup, buf, unix.MSG_DONTWAIT); err != nil {
				break
			}
			left++
		}
		unix.Close(dup)
		st := rx.Stats()
		if got := int(st.RxPackets+st.RxDropped[netdev.DropClosed]) + left; got != n {
			t.Errorf("round %d (wait %v): rx_packets %d + rx_dropped_closed %d + left in the socket %d = %d of %d sent",
				round, wait, st.RxPackets, st.RxDropped[netdev.DropClosed], left, got, n)
		}
	}
}

// TestGRORecvSize checks that RecvSize bounds each datagram of a GRO
// device, not its trains: ten 1000-byte datagrams sent as one GSO message
// arrive (one train, 10000 bytes, over a RecvSize of 1920), and ten of
// 3000 bytes are dropped, each counted in rx_truncated.
func TestGRORecvSize(t *testing.T) {
	tx, rx := pair(t, lo4, Config{GSO: true}, Config{GRO: true, RecvSize: 1920})
	if !tx.GSO() || !rx.GRO() {
		t.Skip("no UDP GSO or GRO on this kernel")
	}
	send := func(size int) {
		for i := range 10 {
			if err := tx.Xmit(fill(t, tx, uint32(i), size), i < 9); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := 0
	recv := func() {
		for rx.Wait(200*time.Millisecond) == nil {
			n, err := rx.Poll(64, func(b *skb.Buff) {
				if b.Len() != 1000 {
					t.Errorf("a datagram of %d bytes, want 1000", b.Len())
				}
				b.Free()
			})
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	send(1000)
	recv()
	if st := rx.Stats(); got != 10 || st.RxTruncated != 0 {
		t.Errorf("1000-byte datagrams: %d handed over, %d truncated; want 10 and 0", got, st.RxTruncated)
	}
	send(3000)
	recv()
	if st := rx.Stats(); got != 10 || st.RxTruncated != 10 {
		t.Errorf("3000-byte datagrams: %d handed over in all, %d truncated; want 10 and 10", got, st.RxTruncated)
	}
}
