package netdevtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/netdev/netdevtest"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/pool/pooltest"
)

func TestMain(m *testing.M) { pooltest.Main(m) }

func factory(k knobs, lossy bool) netdevtest.Factory {
	return func(t *testing.T, cfg netdev.Config) *netdevtest.Pair {
		a, b := newFakePair(cfg, k)
		return &netdevtest.Pair{TX: a, RX: b, Fill: fakeFill, Seq: fakeSeq, MaxPayload: 1500, Lossy: lossy}
	}
}

// TestLegal runs the suite on devices that read the contract differently
// from memring, each legally: it must pass them all.
func TestLegal(t *testing.T) {
	for _, c := range []struct {
		name  string
		k     knobs
		lossy bool
	}{
		{"eager,flush-on-close", knobs{eager: true, flushOnClose: true}, false},
		{"lagging-completions", knobs{lag: true}, false},
		{"lossy", knobs{lossEvery: 97}, true},
	} {
		t.Run(c.name, func(t *testing.T) { netdevtest.Run(t, factory(c.k, c.lossy)) })
	}
}

// TestRunPool runs the suite with pools of another shape: a bounded,
// contiguous class of frames, as an AF_XDP UMEM would be.
func TestRunPool(t *testing.T) {
	pc := pool.Config{Classes: []pool.Class{{Size: 512}, {Size: 2048, Max: 2048, Contiguous: true}, {Size: 16 << 10}}}
	netdevtest.RunPool(t, pc, factory(knobs{}, false))
}

// broken lists devices with one bug each, the subtests that find it, and a
// piece of the failure message.
var broken = map[string]struct {
	k     knobs
	lossy bool
	run   string
	want  string
}{
	"no-error-doorbell": {knobs{noErrorDoorbell: true}, false, "doorbell", "before an Xmit that failed"},
	"leak-on-error":     {knobs{leakOnError: true}, false, "ownership", "had not freed it"},
	"dup":               {knobs{dup: true}, false, "ordering", "delivered twice"},
	"ignore-budget":     {knobs{ignoreBudget: true}, false, "poll", "a budget of 0 hands none over"},
	"no-wake":           {knobs{noWake: true}, false, "poll", "as soon as the packet arrives"},
	"bad-tx-bytes":      {knobs{badTxBytes: true}, false, "stats", "tx_bytes by"},
	"loses-packets":     {knobs{lossEvery: 97}, false, "ordering", "packets lost"},
	"clone-on-xmit":     {knobs{cloneOnXmit: true}, false, "no_clone", "more buffer headers than blocks"},
	"too-lossy":         {knobs{lossEvery: 10}, true, "ordering", "packets lost"},
}

// TestBroken is run by TestCatches in a child process, for one broken
// device named by NETDEVTEST_BROKEN.
func TestBroken(t *testing.T) {
	b, ok := broken[os.Getenv("NETDEVTEST_BROKEN")]
	if !ok {
		t.Skip("run by TestCatches")
	}
	netdevtest.Run(t, factory(b.k, b.lossy))
}

// TestCatches runs the suite on each broken device in a child process and
// checks that it fails, saying why.
func TestCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in child processes")
	}
	for name, b := range broken {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBroken$/^"+b.run+"$", "-test.count=1")
			cmd.Env = append(os.Environ(), "NETDEVTEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a device that is broken (%s):\n%s", name, out)
			}
			if !strings.Contains(string(out), b.want) {
				t.Errorf("the suite failed %s without saying %q:\n%s", name, b.want, out)
			}
		})
	}
}
