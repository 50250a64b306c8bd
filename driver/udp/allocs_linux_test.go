//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// TestZeroAllocs asserts that the steady state allocates nothing on the Go
// heap per datagram, on both sides: transmit with bursts of 1 and 64, GSO
// runs, super-packets and XmitTo; receive with and without copybreak and
// with GRO trains split into copies and into clones.
func TestZeroAllocs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		burst     int
		size      int
		gso, gro  bool
		super     int
		copybreak int
		to        bool
		from      bool // XmitFrom, into a receiver with PktInfo
		keepP     bool // a receiver with KeepP
		busy      bool // received with BusyPoll, not Wait and Poll
	}{
		{name: "burst1", burst: 1, size: 64},
		{name: "burst64", burst: 64, size: 64},
		{name: "burst1/keepp", burst: 1, size: 64, keepP: true},
		{name: "burst64/nocopybreak", burst: 64, size: 64, copybreak: netdev.CopybreakOff},
		{name: "burst64/1400", burst: 64, size: 1400},
		{name: "gso", burst: 64, size: 64, gso: true},
		{name: "gso+gro/copies", burst: 64, size: 64, gso: true, gro: true},
		{name: "gso+gro/clones", burst: 32, size: 1400, gso: true, gro: true},
		{name: "super", burst: 1, size: 64, super: 64, gso: true},
		{name: "super/nogso", burst: 1, size: 64, super: 16},
		{name: "xmitto", burst: 64, size: 64, gso: true, to: true},
		{name: "xmitfrom+pktinfo", burst: 64, size: 64, gso: true, to: true, from: true},
		{name: "xmitfrom+pktinfo/burst1", burst: 1, size: 64, to: true, from: true},
		{name: "busypoll/burst1", burst: 1, size: 64, busy: true},
		{name: "busypoll/burst64", burst: 64, size: 64, busy: true},
		{name: "busypoll/gso+gro", burst: 64, size: 64, gso: true, gro: true, busy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx := openT(t, Config{Config: netdev.Config{Copybreak: tc.copybreak}, Local: lo4, GRO: tc.gro, RcvBuf: 8 << 20,
				PktInfo: tc.from, KeepP: tc.keepP})
			txc := Config{Local: lo4, GSO: tc.gso}
			if !tc.to {
				txc.Remote = rx.LocalAddr()
			}
			tx := openT(t, txc)
			dst := rx.LocalAddr()
			c := tx.Cache()
			per := tc.burst
			if tc.super > 0 {
				per = tc.super
			}
			got := 0
			var failed error
			h := func(b *skb.Buff) {
				if tc.from && rx.DstAddr() != lo4.Addr() {
					failed = fmt.Errorf("DstAddr %v, want %v", rx.DstAddr(), lo4.Addr())
				}
				got++
				rx.Cache().Free(b)
			}
			cycle := func() {
				for i := range tc.burst {
					n := tc.size
					if tc.super > 0 {
						n *= tc.super
					}
					b, err := c.Alloc(n)
					if err != nil {
						failed = err
						return
					}
					b.Put(n)
					if tc.super > 0 {
						b.SetGSO(tc.size, tc.super, skb.GSOUDPL4)
					}
					if tc.from {
						err = tx.XmitFrom(b, lo4.Addr(), dst, i < tc.burst-1)
					} else if tc.to {
						err = tx.XmitTo(b, dst, i < tc.burst-1)
					} else {
						err = tx.Xmit(b, i < tc.burst-1)
					}
					if err != nil {
						failed = err
						return
					}
				}
				got = 0
				deadline := time.Now().Add(2 * time.Second)
				for got < per && time.Now().Before(deadline) {
					if tc.busy {
						if _, err := rx.BusyPoll(64, h, 100*time.Millisecond); err != nil {
							failed = err
							return
						}
						continue
					}
					if err := rx.Wait(100 * time.Millisecond); err != nil && err != netdev.ErrTimeout {
						failed = err
						return
					}
					if _, err := rx.Poll(64, h); err != nil {
						failed = err
						return
					}
				}
				if got != per {
					failed = fmt.Errorf("received %d of %d", got, per)
				}
			}
			for range 10 {
				cycle() // warm the caches
			}
			allocs := testing.AllocsPerRun(200, cycle)
			if failed != nil {
				t.Fatal(failed)
			}
			if allocs != 0 {
				t.Errorf("%.1f allocations per cycle of %d datagrams", allocs, per)
			}
		})
	}
}

// TestDropAllocs asserts that a datagram refused for its destination
// (ErrNoDestination, counted in tx_dropped_error) costs no heap
// allocation, as XmitTo's doc says: a generator to a bad address drops at
// full speed without feeding the garbage collector.
func TestDropAllocs(t *testing.T) {
	tx := openT(t, Config{Local: lo4})
	bad := netip.MustParseAddrPort("[::1]:9") // IPv6 on an IPv4 socket
	c := tx.Cache()
	allocs := testing.AllocsPerRun(200, func() {
		b, err := c.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		b.Put(64)
		if err := tx.XmitTo(b, bad, false); !errors.Is(err, ErrNoDestination) {
			t.Fatalf("XmitTo %v: %v, want ErrNoDestination", bad, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a refused datagram, want 0", allocs)
	}
}
