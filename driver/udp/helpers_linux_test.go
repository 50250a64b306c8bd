//go:build linux

package udp

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

var (
	lo4 = netip.MustParseAddrPort("127.0.0.1:0")
	lo6 = netip.MustParseAddrPort("[::1]:0")
)

// openT opens a device and closes it when the test ends.
func openT(t testing.TB, cfg Config) *Device {
	t.Helper()
	d, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return d
}

// pair opens a receiver on local and a sender connected to it.
func pair(t testing.TB, local netip.AddrPort, tx, rx Config) (txd, rxd *Device) {
	t.Helper()
	rx.Local = local
	rxd = openT(t, rx)
	tx.Remote = rxd.LocalAddr()
	txd = openT(t, tx)
	return txd, rxd
}

// fill makes a datagram of size bytes carrying seq in its first four bytes
// (when it has them) and a pattern after.
func fill(t testing.TB, d *Device, seq uint32, size int) *skb.Buff {
	t.Helper()
	b, err := d.Cache().Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	p := b.Put(size)
	pattern(p, seq)
	return b
}

func pattern(p []byte, seq uint32) {
	if len(p) >= 4 {
		binary.BigEndian.PutUint32(p, seq)
		for i := 4; i < len(p); i++ {
			p[i] = byte(seq) + byte(i)
		}
	}
}

// checkPattern reports whether p is what pattern wrote for its seq.
func checkPattern(p []byte) (uint32, bool) {
	if len(p) < 4 {
		return 0, true
	}
	seq := binary.BigEndian.Uint32(p)
	for i := 4; i < len(p); i++ {
		if p[i] != byte(seq)+byte(i) {
			return seq, false
		}
	}
	return seq, true
}

// got is one received datagram.
type got struct {
	seq  uint32
	n    int
	src  netip.AddrPort
	bad  bool
	head int
}

// collect receives until want datagrams arrived or the time is up, checking
// each payload, and frees them.
func collect(t testing.TB, d *Device, want int, limit time.Duration) []got {
	t.Helper()
	var out []got
	deadline := time.Now().Add(limit)
	for len(out) < want && time.Now().Before(deadline) {
		if err := d.Wait(50 * time.Millisecond); err != nil && err != netdev.ErrTimeout {
			t.Fatalf("wait: %v", err)
		}
		_, err := d.Poll(64, func(b *skb.Buff) {
			seq, ok := checkPattern(b.Data())
			out = append(out, got{seq: seq, n: b.Len(), src: d.Src(), bad: !ok, head: b.Headroom()})
			d.Cache().Free(b)
		})
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
	}
	return out
}
