package netdev_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/pool/pooltest"
	"github.com/skbdev/skb/skb"
)

func TestMain(m *testing.M) { pooltest.Main(m) }

func TestCopybreak(t *testing.T) {
	p, err := pool.New(pool.Config{Name: "copybreak", Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	defer func() {
		c.Close()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	big, _ := c.Alloc(1500)
	defer c.Free(big)
	payload := bytes.Repeat([]byte{0xa5}, 100)
	copy(big.Put(len(payload)), payload)
	big.SetProtocol(0x0800)
	big.SetMark(7)
	big.SetNetworkHeader(14)
	for _, tc := range []struct {
		threshold, headroom int
		copied              bool
	}{
		{256, 128, true}, {256, 300, true}, {256, 0, true}, {100, 128, false}, {0, 128, false},
		{256, 1000, false}, // no block smaller than big's holds the headroom
	} {
		small := netdev.Copybreak(c, big, tc.threshold, tc.headroom)
		if (small != nil) != tc.copied {
			t.Fatalf("threshold %d: copied %v", tc.threshold, small != nil)
		}
		if small == nil {
			continue
		}
		if small.End() > pool.SmallSize || small.Headroom() < tc.headroom || !bytes.Equal(small.Data(), payload) {
			t.Fatalf("copy: end %d headroom %d data %x", small.End(), small.Headroom(), small.Data())
		}
		if small.Protocol() != 0x0800 || small.Mark() != 7 || small.NetworkOffset() != 14 {
			t.Fatalf("metadata: %#x %d %d", small.Protocol(), small.Mark(), small.NetworkOffset())
		}
		c.Free(small)
	}
	// A nonlinear buffer is left alone.
	pg, off, _ := c.AllocFrag(10)
	big.AddRxFrag(pg, off, 10)
	if netdev.Copybreak(c, big, 256, 128) != nil {
		t.Fatal("copied a nonlinear buffer")
	}
}

func TestStatsNames(t *testing.T) {
	var ctr netdev.Counters
	ctr.RxPacket(100)
	ctr.RxDrop(netdev.DropTruncated, 2)
	ctr.TxDoorbell(64, 6400)
	ctr.TxDrop(netdev.DropRingFull, 1)
	ctr.GSOFallback(netdev.FallbackEIO)
	m := ctr.Snapshot().Map()
	want := map[string]uint64{
		"rx_packets": 1, "rx_bytes": 100, "rx_dropped": 2, "rx_truncated": 2, "rx_dropped_truncated": 2,
		"tx_packets": 64, "tx_bytes": 6400, "tx_doorbells": 1, "tx_dropped": 1, "tx_dropped_ring_full": 1,
		"gso_fallback": 1, "gso_fallback_eio": 1, "rx_copybreak": 0, "tx_ring_full": 0,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %d, want %d", k, m[k], v)
		}
	}
	d := ctr.Snapshot().Sub(netdev.Stats{RxPackets: 1})
	if d.RxPackets != 0 || d.TxPackets != 64 {
		t.Fatalf("sub: %+v", d)
	}
	if netdev.DropReason(200).String() == "" || netdev.FallbackReason(200).String() == "" {
		t.Fatal("names of unknown reasons")
	}
	want1 := "rx_packets=1 rx_bytes=100 rx_dropped=2 rx_truncated=2 tx_packets=64 tx_bytes=6400 tx_doorbells=1 tx_dropped=1 " +
		"gso_fallback=1 rx_dropped_truncated=2 tx_dropped_ring_full=1 gso_fallback_eio=1"
	if got := fmt.Sprint(ctr.Snapshot()); got != want1 {
		t.Errorf("String:\n%s\nwant\n%s", got, want1)
	}
	if got := (netdev.Stats{}).String(); got != "0" {
		t.Errorf("String of no counts: %q, want \"0\"", got)
	}
}

func TestConfigValidate(t *testing.T) {
	p, _ := pool.New(pool.Config{Name: "validate"})
	p.Close()
	for _, c := range []netdev.Config{
		{Batch: -1}, {Batch: 1 << 30}, {Headroom: -7}, {Headroom: 1 << 20}, {Copybreak: -7}, {Pool: p},
	} {
		if err := c.Validate(); !errors.Is(err, netdev.ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []netdev.Config{{}, {Batch: 64, Headroom: netdev.NoHeadroom, Copybreak: netdev.CopybreakOff}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestConfigError checks that a driver's config error matches both
// sentinels and says "invalid config" once.
func TestConfigError(t *testing.T) {
	driverErr := errors.New("mydriver: invalid config")
	verr := netdev.Config{Headroom: -5}.Validate()
	err := netdev.ConfigError(driverErr, verr)
	if !errors.Is(err, driverErr) || !errors.Is(err, netdev.ErrConfig) {
		t.Errorf("%v matches the driver's sentinel: %v, netdev's: %v; want both", err, errors.Is(err, driverErr), errors.Is(err, netdev.ErrConfig))
	}
	if got, want := err.Error(), "netdev: invalid config: headroom -5 (NoHeadroom, 0 to 4096)"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if netdev.ConfigError(driverErr, nil) != nil {
		t.Error("ConfigError of nil is not nil")
	}

	// A driver's sentinel made with NewConfigError matches netdev's, and
	// an error made with ConfigErrorf both.
	mine, other := netdev.NewConfigError("mydriver: invalid config"), netdev.NewConfigError("other: invalid config")
	err = fmt.Errorf("mydriver: open x: %w", netdev.ConfigErrorf(mine, "ring size %d", 3))
	if !errors.Is(err, mine) || !errors.Is(err, netdev.ErrConfig) || errors.Is(err, other) {
		t.Errorf("%v matches mine %v, netdev's %v, another driver's %v; want true, true, false", err, errors.Is(err, mine), errors.Is(err, netdev.ErrConfig), errors.Is(err, other))
	}
	if got, want := err.Error(), "mydriver: open x: invalid config: ring size 3"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if mine.Error() != "mydriver: invalid config" || !errors.Is(mine, netdev.ErrConfig) {
		t.Errorf("sentinel %q does not match netdev.ErrConfig", mine)
	}
}

// TestCounterMisuse checks that a reason the counters have no slot for, and
// BadXmit of a live buffer, panic with a message that says so rather than
// a runtime error.
func TestCounterMisuse(t *testing.T) {
	var ctr netdev.Counters
	p, err := pool.New(pool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	b, _ := c.Alloc(10)
	for name, tc := range map[string]struct {
		f    func()
		want string
	}{
		"rx drop":  {func() { ctr.RxDrop(netdev.NumDropReasons, 1) }, "no such reason"},
		"tx drop":  {func() { ctr.TxDrop(200, 1) }, "drop reason 200: no such reason"},
		"fallback": {func() { ctr.GSOFallback(9) }, "GSOFallback(9): no such reason"},
		"live":     {func() { netdev.BadXmit("test", b) }, "BadXmit of a live"},
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			tc.f()
			return ""
		}()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "runtime error") {
			t.Errorf("%s: panic %q, want %q", name, msg, tc.want)
		}
	}
	c.Free(b)
	c.Close()
	if err := p.Close(); err != nil {
		t.Error(err)
	}
}

// TestCopybreakPulledHeaders copies a received frame whose mac header was
// pulled (eth_type_trans) and whose csum_start sits there: the copy has the
// header's bytes too and keeps both, with the pool's 128 bytes of headroom;
// with none, it unsets the mac header and turns CHECKSUM_PARTIAL into
// CHECKSUM_NONE, the bytes not being in the copy. Small blocks come out
// of the cache dirty first, so that bytes not copied show.
func TestCopybreakPulledHeaders(t *testing.T) {
	for _, hr := range []int{128, pool.NoHeadroom} {
		p, err := pool.New(pool.Config{Headroom: hr})
		if err != nil {
			t.Fatal(err)
		}
		c := p.NewCache()
		dirty, _ := c.Alloc(0)
		for i := range dirty.Head() {
			dirty.Head()[i] = 0xee
		}
		c.Free(dirty)
		big, _ := c.Alloc(1500)
		if big.Headroom() < 14 {
			big.Reserve(14)
		}
		data := big.Put(60)
		for i := range data {
			data[i] = byte(i)
		}
		big.ResetMacHeader()
		if err := big.SetChecksumPartial(0, 6); err != nil {
			t.Fatal(err)
		}
		big.Pull(14)
		big.ResetNetworkHeader()
		small := netdev.Copybreak(c, big, 256, 0)
		if small == nil {
			t.Fatalf("headroom %d: not copied", hr)
		}
		if !bytes.Equal(small.Data(), data[14:]) || !small.NetworkHeaderWasSet() || small.NetworkOffset() != 0 {
			t.Errorf("headroom %d: data %x, network header %v at %d", hr, small.Data(), small.NetworkHeaderWasSet(), small.NetworkOffset())
		}
		if hr == 128 {
			if !small.MacHeaderWasSet() || small.MacOffset() != -14 || !bytes.Equal(small.MacHeader()[:14], data[:14]) ||
				small.IPSummed() != skb.ChecksumPartial || small.CsumStart() != -14 {
				t.Errorf("headroom %d: mac header %v at %d (% x), checksum %v at %d; want the pulled 14 bytes, CHECKSUM_PARTIAL at -14",
					hr, small.MacHeaderWasSet(), small.MacOffset(), small.MacHeader(), small.IPSummed(), small.CsumStart())
			}
		} else if small.MacHeaderWasSet() || small.IPSummed() != skb.ChecksumNone {
			t.Errorf("headroom %d: mac header %v at %d, checksum %v; want unset, CHECKSUM_NONE", hr, small.MacHeaderWasSet(), small.MacOffset(), small.IPSummed())
		}
		c.Free(small)
		c.Free(big)
		c.Close()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
}
