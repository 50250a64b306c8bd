package main

import (
	"bytes"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
)

// ipIn runs ip(8) with args inside h's namespace.
func ipIn(t *testing.T, h *lab.Host, args ...string) {
	t.Helper()
	if out, err := h.Cmd("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s in %s: %v: %s", strings.Join(args, " "), h.NSName, err, out)
	}
}

// rxPackets returns the packets h's veth end has received.
func rxPackets(t *testing.T, h *lab.Host) uint64 {
	t.Helper()
	var n uint64
	err := h.Do(func() error {
		l, err := netlink.LinkByName(h.Ifname)
		if err != nil {
			return err
		}
		n = l.Attrs().Statistics.RxPackets
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDstGuard checks the destination guard inside a lab whose side A has
// a default route via side B, as a host behind a gateway: addresses on A's
// link pass, 198.18.0.0/15 addresses behind the gateway, a default route
// without a gateway and missing routes are refused, and a link-layer device
// must be on the route's interface. Nothing is sent: the guard only asks
// the kernel (and B's veth counts no packet while the commands refuse).
func TestDstGuard(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	a, b := &l.A, &l.B
	ipIn(t, a, "route", "add", "default", "via", b.Addr.String())

	guard := func(dst, ifname string) error {
		t.Helper()
		var gerr error
		if err := a.Do(func() error {
			gerr = routeGuard("dst", netip.MustParseAddr(dst), netip.Addr{}, ifname)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return gerr
	}
	viaGW := "the route goes via gateway " + b.Addr.String() + " on " + a.Ifname + ": " + guardRule
	tests := []struct {
		dst, ifname string
		want        string // "" passes
	}{
		{"198.18.0.2", "", ""},
		{"198.18.0.1", "", ""}, // A's own address: local
		{"127.0.0.1", "", ""},
		{"127.1.2.3", "", ""},
		{"198.18.0.2", a.Ifname, ""},
		{"127.0.0.1", "lo", ""},
		{"198.19.255.255", "", viaGW},
		{"198.18.1.5", "", viaGW},
		{"198.18.1.5", a.Ifname, viaGW},
		{"198.18.0.2", "lo", "the route leaves through " + a.Ifname + ", not lo"},
		{"127.0.0.1", a.Ifname, "the route leaves through lo, not " + a.Ifname + ": the device sends on " + a.Ifname + " only; give an address on its link"},
		{"127.255.255.255", "", "a broadcast address on lo: want a unicast address"},
		{"198.18.0.1", a.Ifname, "the route leaves through lo, not " + a.Ifname},
	}
	for _, tc := range tests {
		err := guard(tc.dst, tc.ifname)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s on %q: %v, want it allowed", tc.dst, tc.ifname, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s on %q: %v, want %q", tc.dst, tc.ifname, err, tc.want)
		}
	}

	// The user's case, through the command: pktgen and the pingpong client
	// in A, to a 198.18.0.0/15 address behind the gateway, on every device.
	bin := buildSkb(t)
	rx0 := rxPackets(t, b)
	for _, args := range [][]string{
		{"pktgen", "--dst", "198.18.1.5:9000", "-n", "10", "-t", "1s"},
		{"pktgen", "--dst", "198.19.255.255:9000", "-n", "10", "-t", "1s"},
		{"pktgen", "--dev", "afpacket:" + a.Ifname, "--dst", "198.18.1.5:9000", "-n", "10", "-t", "1s"},
		{"pktgen", "--dev", "afxdp:" + a.Ifname, "--dst", "198.18.1.5:9000", "-n", "10", "-t", "1s"},
		{"pktgen", "--dev", "afpacket:" + a.Ifname, "--dst", "198.18.1.5:9000", "--dst-mac", lab.MACB.String(), "-n", "10", "-t", "1s"},
		{"pingpong", "--connect", "198.18.1.5:9100", "-n", "10", "-t", "1s"},
		{"pingpong", "--dev", "afpacket:" + a.Ifname, "--connect", "198.18.1.5:9100", "-n", "10", "-t", "1s"},
	} {
		c := a.Cmd(bin, args...)
		var e bytes.Buffer
		c.Stderr = &e
		err := c.Run()
		lines := strings.Split(strings.TrimRight(e.String(), "\n"), "\n")
		if err == nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "skb: "+args[0]+": --") || !strings.Contains(lines[0], viaGW) {
			t.Errorf("%v: %v, stderr %q; want one line saying %q", args, err, e.String(), viaGW)
		}
	}
	if rx := rxPackets(t, b); rx != rx0 {
		t.Errorf("the gateway's veth received %d packets while the commands refused to send", rx-rx0)
	}

	// A default route without a gateway reaches every address too.
	ipIn(t, a, "route", "replace", "default", "dev", a.Ifname)
	if err := guard("198.19.255.255", ""); err == nil || !strings.Contains(err.Error(), "the route is the default route on "+a.Ifname) {
		t.Errorf("default route without a gateway: %v", err)
	}
	if err := guard("198.18.0.2", ""); err != nil {
		t.Errorf("on-link beside a default route: %v", err)
	}

	// No route at all.
	ipIn(t, a, "route", "del", "default")
	if err := guard("198.19.0.1", ""); err == nil || !strings.Contains(err.Error(), "no route to it in this network namespace") {
		t.Errorf("no route: %v", err)
	}
	for _, args := range [][]string{
		{"pktgen", "--dev", "afpacket:" + a.Ifname, "--dst", "198.19.0.1:9000", "-n", "1"},
		{"pktgen", "--dev", "afpacket:" + a.Ifname, "--dst", "10.255.255.1:9000", "--allow-any-dst", "-n", "1"},
	} {
		c := a.Cmd(bin, args...)
		var e bytes.Buffer
		c.Stderr = &e
		if err := c.Run(); err == nil || !strings.Contains(e.String(), "no route to") || strings.Contains(e.String(), "neighbour") {
			t.Errorf("%v: %v, %q; want no route", args, err, e.String())
		}
	}
}

// TestDstGuardRootNamespace checks, without sending, that the guard refuses
// a 198.18.0.0/15 address the root namespace reaches through a gateway,
// as the default route of a host does. It skips on a host whose root
// namespace has no such route.
func TestDstGuardRootNamespace(t *testing.T) {
	dst := netip.MustParseAddr("198.19.255.255")
	routes, err := netlink.RouteGet(dst.AsSlice())
	if err != nil || len(routes) == 0 {
		t.Skipf("no route to %v here: %v", dst, err)
	}
	gw, ok := gateway(routes[0])
	if !ok {
		t.Skipf("the route to %v has no gateway here", dst)
	}
	if err := routeGuard("dst", dst, netip.Addr{}, ""); err == nil || !strings.Contains(err.Error(), "via gateway "+gw) {
		t.Errorf("routeGuard(%v) = %v, want via gateway %s", dst, err, gw)
	}
	if _, err := exec.LookPath("ip"); err == nil {
		out, _ := exec.Command("ip", "route", "get", dst.String()).CombinedOutput()
		t.Logf("ip route get %v: %s", dst, bytes.TrimSpace(out))
	}
}
