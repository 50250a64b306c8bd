//go:build linux

package afpacket

import (
	"sync"
	"testing"
	"time"

	"github.com/skbdev/skb/skb"
)

// TestFanout opens two devices in one fanout group, each polled by its own
// goroutine, and sends many flows: every frame arrives exactly once, both
// queues get some, and with FanoutHash a flow stays on one queue.
func TestFanout(t *testing.T) {
	for _, mode := range []FanoutMode{FanoutHash, FanoutLB} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			var devs []*Device
			if err := l.B.Do(func() (err error) {
				devs, err = OpenFanout(Config{Ifname: l.B.Ifname, Fanout: mode}, 2)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			for _, d := range devs {
				t.Cleanup(func() { d.Close() })
			}
			if devs[0].FanoutGroup() != devs[1].FanoutGroup() {
				t.Fatalf("groups %d and %d", devs[0].FanoutGroup(), devs[1].FanoutGroup())
			}
			tx := openIn(t, &l.A, Config{})
			const flows, per = 32, 8
			const n = flows * per
			var mu sync.Mutex
			queueOf := map[uint16]map[int]bool{} // source port -> queues
			counts := make([]int, 2)
			seen := make([]bool, n)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for q, d := range devs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						d.Poll(64, func(b *skb.Buff) {
							if seq, _, ok := seqOf(b); ok && b.QueueMapping() == q {
								port := uint16(b.Data()[34])<<8 | uint16(b.Data()[35])
								mu.Lock()
								if seq < n && !seen[seq] {
									seen[seq] = true
									counts[q]++
								} else {
									t.Errorf("queue %d: seq %d twice", q, seq)
								}
								if queueOf[port] == nil {
									queueOf[port] = map[int]bool{}
								}
								queueOf[port][q] = true
								mu.Unlock()
							} else if ok {
								t.Errorf("queue %d got a buffer with queue mapping %d", q, b.QueueMapping())
							}
							d.Cache().Free(b)
						})
						d.Wait(5 * time.Millisecond)
					}
				}()
			}
			for i := range per {
				for f := range flows {
					fr.uf.SourcePort = uint16(20000 + f)
					sendN(t, tx, fr, uint32(i*flows+f), 1, 64, 1)
				}
			}
			deadline := time.Now().Add(3 * time.Second)
			for {
				mu.Lock()
				total := counts[0] + counts[1]
				mu.Unlock()
				if total == n || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			close(stop)
			wg.Wait()
			if counts[0]+counts[1] != n || counts[0] == 0 || counts[1] == 0 {
				t.Fatalf("queues got %v of %d", counts, n)
			}
			if mode == FanoutHash {
				for port, qs := range queueOf {
					if len(qs) != 1 {
						t.Errorf("flow from port %d on queues %v", port, qs)
					}
				}
			}
			t.Logf("queues got %v", counts)
		})
	}
}

// TestFanoutJoinUnderTraffic opens fanout groups again and again while
// frames arrive: a member bound before it joined its group would take
// frames on its own hook that the group also hands to a member, so that
// one frame came up twice.
func TestFanoutJoinUnderTraffic(t *testing.T) {
	l := newLab(t)
	fr := newFramer(l)
	tx := openIn(t, &l.A, Config{})
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() { // the sender's own goroutine, as its device's owner
		defer close(sent)
		c := tx.Cache()
		deadline := time.Now().Add(10 * time.Second)
		for seq := uint32(0); time.Now().Before(deadline); seq++ {
			select {
			case <-stop:
				return
			default:
			}
			b, err := c.Alloc(fr.uf.HeaderLen() + 64)
			if err != nil {
				return
			}
			fr.fill(b, seq, 64)
			tx.Xmit(b, seq%16 != 15)
		}
	}()
	defer func() { close(stop); <-sent }()
	dups := 0
	for range 40 {
		var devs []*Device
		if err := l.B.Do(func() (err error) {
			devs, err = OpenFanout(Config{Ifname: l.B.Ifname, Fanout: FanoutLB, BlockCount: 4}, 2)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		seen := map[uint32]bool{}
		for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
			for _, d := range devs {
				d.Poll(256, func(b *skb.Buff) {
					if seq, _, ok := seqOf(b); ok {
						if seen[seq] {
							dups++
						}
						seen[seq] = true
					}
					b.Free()
				})
			}
		}
		for _, d := range devs {
			d.Close()
		}
	}
	if dups > 0 {
		t.Errorf("%d frames handed over by both members of a group", dups)
	}
}

func TestOpenFanoutErrors(t *testing.T) {
	if _, err := OpenFanout(Config{Ifname: "lo"}, 0); err == nil {
		t.Fatal("fanout of 0 devices opened")
	}
	if _, err := OpenFanout(Config{Ifname: "nosuchif0"}, 2); err == nil {
		t.Fatal("fanout on a missing interface opened")
	}
}
