//go:build linux

package afpacket

import (
	"errors"
	"testing"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// TestVLAN sends a tagged frame: the receiving kernel moves the tag into the
// skb (VLAN offload), and the device puts it back where it was on the wire.
func TestVLAN(t *testing.T) {
	l := newLab(t)
	fr := newFramer(l)
	fr.uf.VLANProto, fr.uf.VLANTCI = header.EtherTypeVLAN, 0x2123 // priority 1, VID 0x123
	rx := openIn(t, &l.B, Config{})
	tx := openIn(t, &l.A, Config{})
	// 1518 bytes: 4 over MTU+14, allowed for a tagged frame.
	sendN(t, tx, fr, 0, 1, 1500-28, 1)
	sendN(t, tx, fr, 1, 1, 64, 1)
	got := collect(t, rx, 2, 3*time.Second, func(b *skb.Buff, seq uint32, payload int) {
		f, err := header.ParseFrame(b.Data())
		if err != nil {
			t.Fatal(err)
		}
		if f.VLANProto != header.EtherTypeVLAN || f.VLANTCI != 0x2123 {
			t.Errorf("seq %d: vlan proto %#x tci %#x, want 0x8100 0x2123", seq, f.VLANProto, f.VLANTCI)
		}
		if b.NetworkOffset() != 18 || b.Protocol() != header.EtherTypeIPv4 {
			t.Errorf("seq %d: network offset %d protocol %#x", seq, b.NetworkOffset(), b.Protocol())
		}
	})
	if got != 2 {
		t.Fatalf("received %d of 2 tagged frames; tx %+v", got, tx.Stats())
	}
}

// TestQinQOverMTU sends an 802.1ad-tagged frame 4 bytes over MTU+14 among
// good ones: the kernel gives that allowance to 802.1Q tags only, so the
// device refuses it (ErrTooBig, tx_dropped_too_big) before the kernel
// would, and the frames around it go, in either transmit mode.
func TestQinQOverMTU(t *testing.T) {
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLab(t)
			good := newFramer(l)
			qinq := newFramer(l)
			qinq.uf.VLANProto, qinq.uf.VLANTCI = header.EtherTypeQinQ, 7
			tx := openIn(t, &l.A, Config{TxMode: mode})
			c := tx.Cache()
			frame := func(fr *framer, seq uint32, payload int) *skb.Buff {
				b, err := c.Alloc(fr.uf.HeaderLen() + payload)
				if err != nil {
					t.Fatal(err)
				}
				fr.fill(b, seq, payload)
				return b
			}
			if err := tx.Xmit(frame(good, 0, 64), true); err != nil {
				t.Fatal(err)
			}
			if err := tx.Xmit(frame(qinq, 1, 1500-28), true); !errors.Is(err, netdev.ErrTooBig) {
				t.Errorf("a 1518-byte 802.1ad frame: %v, want ErrTooBig", err)
			}
			for i := range 2 {
				if err := tx.Xmit(frame(good, uint32(2+i), 64), i == 0); err != nil {
					t.Fatal(err)
				}
			}
			if st := tx.Stats(); st.TxPackets != 3 || st.TxDropped[netdev.DropTooBig] != 1 || st.TxDroppedTotal() != 1 {
				t.Errorf("tx_packets %d, tx_dropped_too_big %d, tx_dropped %d; want 3, 1, 1", st.TxPackets, st.TxDropped[netdev.DropTooBig], st.TxDroppedTotal())
			}
		})
	}
}

// TestSnapLen: frames longer than SnapLen arrive cut and are dropped and
// counted as truncated; shorter ones are delivered whole.
func TestSnapLen(t *testing.T) {
	l := newLab(t)
	fr := newFramer(l)
	rx := openIn(t, &l.B, Config{SnapLen: 200})
	tx := openIn(t, &l.A, Config{})
	sendN(t, tx, fr, 0, 5, 500, 5)
	sendN(t, tx, fr, 5, 5, 64, 5)
	got := collect(t, rx, 5, 3*time.Second, func(b *skb.Buff, seq uint32, payload int) {
		if seq < 5 {
			t.Errorf("seq %d (a 542-byte frame) delivered with SnapLen 200", seq)
		}
	})
	// Let the truncated ones be counted too: they come first.
	if got != 5 {
		t.Fatalf("received %d of 5 short frames", got)
	}
	if s := rx.Stats(); s.RxTruncated != 5 || s.RxDropped[netdev.DropTruncated] != 5 {
		t.Fatalf("rx_truncated %d rx_dropped_truncated %d, want 5", s.RxTruncated, s.RxDropped[netdev.DropTruncated])
	}
}

// TestMalformed sends a frame whose IPv4 header is bad: delivered and counted
// unparsed by default, dropped and counted with DropMalformed.
func TestMalformed(t *testing.T) {
	for _, drop := range []bool{false, true} {
		name := "deliver"
		if drop {
			name = "drop"
		}
		t.Run(name, func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			rx := openIn(t, &l.B, Config{DropMalformed: drop})
			tx := openIn(t, &l.A, Config{})
			b, _ := tx.Cache().Alloc(200)
			fr.fill(b, 7, 100)
			b.Data()[14] = 0x43 // IPv4, header length 12 bytes: invalid
			if err := tx.Xmit(b, false); err != nil {
				t.Fatal(err)
			}
			sendN(t, tx, fr, 8, 1, 100, 1) // a good one after it
			var bad, good int
			deadline := time.Now().Add(3 * time.Second)
			for good == 0 && time.Now().Before(deadline) {
				rx.Poll(64, func(b *skb.Buff) {
					d := b.Data()
					switch {
					case len(d) > 14 && d[14] == 0x43:
						bad++
						if b.Protocol() != header.EtherTypeIPv4 || b.NetworkOffset() != 14 || b.TransportHeaderWasSet() {
							t.Errorf("bad frame: protocol %#x network %d transport set %v", b.Protocol(), b.NetworkOffset(), b.TransportHeaderWasSet())
						}
					default:
						if _, _, ok := seqOf(b); ok {
							good++
						}
					}
					rx.Cache().Free(b)
				})
				rx.Wait(10 * time.Millisecond)
			}
			s, rs := rx.Stats(), rx.RingStats()
			if good != 1 {
				t.Fatalf("good frame not received")
			}
			if drop {
				if bad != 0 || s.RxDropped[netdev.DropMalformed] != 1 || rs.RxUnparsed != 0 {
					t.Fatalf("delivered %d bad, rx_dropped_malformed %d, unparsed %d", bad, s.RxDropped[netdev.DropMalformed], rs.RxUnparsed)
				}
				return
			}
			if bad != 1 || s.RxDroppedTotal() != 0 || rs.RxUnparsed != 1 {
				t.Fatalf("delivered %d bad, rx_dropped %d, unparsed %d", bad, s.RxDroppedTotal(), rs.RxUnparsed)
			}
		})
	}
}

// TestJumbo sends and receives 9014-byte frames over a 9000-byte MTU in both
// modes: the transmit ring's slots grow to hold them.
func TestJumbo(t *testing.T) {
	l := labtest.New(t, lab.Options{MTU: 9000})
	fr := newFramer(l)
	rx := openIn(t, &l.B, Config{})
	for i, mode := range []TxMode{TxMmsg, TxRing} {
		tx := openIn(t, &l.A, Config{TxMode: mode})
		sendN(t, tx, fr, uint32(i), 1, 9000-28, 1)
		got := collect(t, rx, 1, 3*time.Second, func(b *skb.Buff, seq uint32, payload int) {
			if b.Len() != 9014 || payload != 9000-28 {
				t.Errorf("%v: frame of %d bytes, payload %d", mode, b.Len(), payload)
			}
		})
		if got != 1 {
			t.Fatalf("%v: jumbo frame not received; tx %+v rx %+v", mode, tx.Stats(), rx.Stats())
		}
	}
}

// TestCloseCountsRing closes receivers with frames in their ring: one that
// never Polled, and one whose handler closes it at the tenth of a hundred.
// Every frame the kernel put in the ring is handed over or counted in
// rx_dropped_closed.
func TestCloseCountsRing(t *testing.T) {
	for _, inHandler := range []bool{false, true} {
		l := newLab(t)
		fr := newFramer(l)
		rx := openIn(t, &l.B, Config{})
		tx := openIn(t, &l.A, Config{})
		sendN(t, tx, fr, 0, 100, 64, 16)
		time.Sleep(50 * time.Millisecond) // the blocks retire
		if inHandler {
			got := 0
			rx.Poll(100, func(b *skb.Buff) {
				b.Free()
				if got++; got == 10 {
					rx.Close()
				}
			})
		} else {
			rx.Close()
		}
		st := rx.Stats()
		if got := st.RxPackets + st.RxDropped[netdev.DropClosed]; got != 100 || st.RxDroppedTotal() != st.RxDropped[netdev.DropClosed] {
			t.Errorf("closed in the handler %v: rx_packets %d + rx_dropped_closed %d = %d of 100 (rx_dropped %d)",
				inHandler, st.RxPackets, st.RxDropped[netdev.DropClosed], got, st.RxDroppedTotal())
		}
	}
}
