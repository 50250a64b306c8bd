//go:build linux

package afpacket

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/skb"
)

var errorsIs = errors.Is

func TestRoundTrip(t *testing.T) {
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		for _, burst := range []int{1, 64} {
			t.Run(fmt.Sprintf("%v/burst%d", mode, burst), func(t *testing.T) {
				l := newLab(t)
				fr := newFramer(l)
				rx := openIn(t, &l.B, Config{})
				tx := openIn(t, &l.A, Config{TxMode: mode})
				const n = 300
				seen := make([]bool, n)
				small, big := 0, 0
				done := make(chan int)
				go func() {
					done <- collect(t, rx, n, 5*time.Second, func(b *skb.Buff, seq uint32, payload int) {
						if seq >= n || seen[seq] {
							t.Errorf("seq %d twice or out of range", seq)
							return
						}
						seen[seq] = true
						if payload < 200 {
							small++
							if b.End() > 512 {
								t.Errorf("frame of %d bytes in a %d-byte block: copybreak missing", b.Len(), b.End())
							}
						} else {
							big++
							if b.End() < 2048 {
								t.Errorf("frame of %d bytes in a %d-byte block, want 2048", b.Len(), b.End())
							}
						}
						if b.Headroom() < 128 || b.MacOffset() != 0 || b.NetworkOffset() != 14 || b.Protocol() != header.EtherTypeIPv4 {
							t.Errorf("headroom %d mac %d net %d proto %#x", b.Headroom(), b.MacOffset(), b.NetworkOffset(), b.Protocol())
						}
						if b.Tstamp() == 0 {
							t.Errorf("no timestamp")
						}
					})
				}()
				for i := 0; i < n; i += 50 {
					pl := 64
					if i%100 == 0 {
						pl = 1000
					}
					sendN(t, tx, fr, uint32(i), 50, pl, burst)
					time.Sleep(time.Millisecond)
				}
				got := <-done
				if got != n {
					t.Fatalf("received %d of %d (small %d big %d); rx %+v tx %+v", got, n, small, big, rx.Stats(), tx.Stats())
				}
				ts := tx.Stats()
				if ts.TxPackets != n || ts.TxDroppedTotal() != 0 {
					t.Errorf("tx stats %+v", ts)
				}
				if burst == 64 && ts.TxDoorbells > uint64(n/25) {
					t.Errorf("%d doorbells for %d frames in bursts of 64", ts.TxDoorbells, n)
				}
				rs := rx.Stats()
				if rs.RxCopybreak != uint64(small) {
					t.Errorf("rx_copybreak %d, want %d", rs.RxCopybreak, small)
				}
				t.Logf("tx %+v", ts)
			})
		}
	}
}

// TestCloseAroundRunOnThread closes one device from another goroutine while
// its goroutine waits in it on a thread with a private descriptor table
// (netdev.RunOnThread), and another from inside such a thread: both
// release their socket and eventfd in the process's table.
func TestCloseAroundRunOnThread(t *testing.T) {
	l := newLab(t)
	fds := openFDs()
	d := openIn(t, &l.B, Config{})
	if !netdevtest.CloseDuringRunOnThread(t, d) {
		t.Skip("the kernel refused a private descriptor table here (seccomp?)")
	}
	d2 := openIn(t, &l.B, Config{})
	var closeErr error
	if _, err := netdev.RunOnThread(-1, func() { closeErr = d2.Close() }); err != nil || closeErr != nil {
		t.Fatal(err, closeErr)
	}
	if n := openFDs(); n != fds {
		t.Errorf("%d descriptors open after both closes, %d before the opens:\n%s", n, fds, fdNames())
	}
}
