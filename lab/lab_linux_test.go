//go:build linux

package lab_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skbdev/skb/internal/icmptest"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsList returns the names `ip netns list` prints.
func netnsList(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	m := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			m[f[0]] = true
		}
	}
	return m
}

// assertGone checks that nothing of the lab called name is left: no namespace
// in `ip netns list` or /run/netns, and no record.
func assertGone(t *testing.T, name string) {
	t.Helper()
	ns := netnsList(t)
	for _, n := range []string{name + "A", name + "B"} {
		if ns[n] {
			t.Errorf("namespace %s still listed by ip netns list", n)
		}
		if _, err := os.Stat("/run/netns/" + n); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/run/netns/%s: %v, want it gone", n, err)
		}
	}
	if _, err := lab.Open(name); !errors.Is(err, lab.ErrNotFound) {
		t.Errorf("lab %s still recorded: Open = %v", name, err)
	}
}

func recordNames(t *testing.T) map[string]bool {
	t.Helper()
	infos, err := lab.List()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, i := range infos {
		m[i.Name] = true
	}
	return m
}

// ownState returns the namespaces and records of this process's labs, and of
// the lab called name: tests of other packages make labs at the same time.
func ownState(t *testing.T, name string) (ns, records []string) {
	t.Helper()
	prefix := "skb" + strconv.Itoa(os.Getpid()) + "_"
	for n := range netnsList(t) {
		if strings.HasPrefix(n, prefix) || (name != "" && (n == name+"A" || n == name+"B")) {
			ns = append(ns, n)
		}
	}
	infos, err := lab.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.PID == os.Getpid() || i.Name == name {
			records = append(records, i.Name)
		}
	}
	return ns, records
}

func TestNewClose(t *testing.T) {
	labtest.RequireRoot(t)
	l, err := lab.New(lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			l.Close()
		}
	})
	if !strings.HasPrefix(l.Name, "skb"+strconv.Itoa(os.Getpid())+"_") {
		t.Errorf("generated name %q lacks skb<pid>_", l.Name)
	}
	for _, h := range []*lab.Host{&l.A, &l.B} {
		if len(h.Ifname) > 15 {
			t.Errorf("ifname %q longer than IFNAMSIZ-1", h.Ifname)
		}
	}
	if l.A.Addr != netip.MustParseAddr("198.18.0.1") || l.B.Addr != netip.MustParseAddr("198.18.0.2") ||
		l.A.Prefix.String() != "198.18.0.0/24" || l.A.Addr6.IsValid() {
		t.Errorf("addresses: A %v %v %v, B %v", l.A.Addr, l.A.Prefix, l.A.Addr6, l.B.Addr)
	}
	if l.A.MAC.String() != lab.MACA.String() || l.B.MAC.String() != lab.MACB.String() || l.A.MTU != 1500 {
		t.Errorf("A %v mtu %d, B %v", l.A.MAC, l.A.MTU, l.B.MAC)
	}
	ns := netnsList(t)
	if !ns[l.A.NSName] || !ns[l.B.NSName] {
		t.Fatalf("ip netns list lacks %s or %s: %v", l.A.NSName, l.B.NSName, ns)
	}
	if !recordNames(t)[l.Name] {
		t.Errorf("lab.List lacks %s", l.Name)
	}

	// Each end is up with its address, peer neighbour permanent, no IPv6 address.
	for _, s := range []struct{ h, peer *lab.Host }{{&l.A, &l.B}, {&l.B, &l.A}} {
		nh, err := netlink.NewHandleAt(s.h.NS, unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatal(err)
		}
		link, err := nh.LinkByName(s.h.Ifname)
		if err != nil {
			t.Fatal(err)
		}
		if link.Type() != "veth" || link.Attrs().Index != s.h.Ifindex || link.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s: type %s index %d flags %v", s.h.Ifname, link.Type(), link.Attrs().Index, link.Attrs().Flags)
		}
		addrs, _ := nh.AddrList(link, netlink.FAMILY_ALL)
		if len(addrs) != 1 || addrs[0].IPNet.String() != netip.PrefixFrom(s.h.Addr, 24).String() {
			t.Errorf("%s addresses %v, want only %v/24", s.h.Ifname, addrs, s.h.Addr)
		}
		neighs, _ := nh.NeighList(link.Attrs().Index, unix.AF_INET)
		found := false
		for _, n := range neighs {
			if n.IP.Equal(s.peer.Addr.AsSlice()) && n.State == netlink.NUD_PERMANENT && n.HardwareAddr.String() == s.peer.MAC.String() {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no permanent neighbour %v at %v in %v", s.h.Ifname, s.peer.Addr, s.peer.MAC, neighs)
		}
		nh.Close()
	}

	// Hold namespace A open past Close, to see the veth itself deleted.
	keep, err := netns.GetFromName(l.A.NSName)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	name := l.Name
	closed = true
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertGone(t, name)
	nh, err := netlink.NewHandleAt(keep, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	if link, err := nh.LinkByName(l.A.Ifname); err == nil {
		t.Errorf("veth %s still exists after Close: %v", l.A.Ifname, link.Attrs())
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := l.A.Do(func() error { return nil }); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Do after Close = %v, want net.ErrClosed", err)
	}
	if err := l.A.Cmd("true").Run(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Cmd after Close: Run = %v, want net.ErrClosed", err)
	}
	if err := l.SetThreaded(true); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SetThreaded after Close = %v, want net.ErrClosed", err)
	}
}

// udpAcross sends count datagrams from src to dst's address and checks that
// they arrive, through the kernel's UDP sockets opened inside each namespace.
func udpAcross(t *testing.T, src, dst *lab.Host, dstAddr netip.Addr, count int) {
	t.Helper()
	var rx *net.UDPConn
	if err := dst.Do(func() (err error) {
		rx, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(dstAddr, 0)))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", dst.NSName, err)
	}
	defer rx.Close()
	to := rx.LocalAddr().(*net.UDPAddr)
	var tx *net.UDPConn
	if err := src.Do(func() (err error) {
		tx, err = net.DialUDP("udp", nil, to)
		return err
	}); err != nil {
		t.Fatalf("dial %v from %s: %v", to, src.NSName, err)
	}
	defer tx.Close()
	buf := make([]byte, 2048)
	for i := range count {
		msg := fmt.Appendf(nil, "lab datagram %d", i)
		if _, err := tx.Write(msg); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		rx.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, from, err := rx.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("receive %d in %s: %v", i, dst.NSName, err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("received %q, want %q", buf[:n], msg)
		}
		if from.Addr().Unmap() != src.Addr && from.Addr() != src.Addr6 {
			t.Fatalf("from %v, want %v", from, src.Addr)
		}
	}
}

func TestUDPAcross(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	udpAcross(t, &l.A, &l.B, l.B.Addr, 4)
	udpAcross(t, &l.B, &l.A, l.A.Addr, 4)
}

func TestIPv6(t *testing.T) {
	l := labtest.New(t, lab.Options{IPv6: true})
	if l.A.Addr6 != lab.Addr6A || l.B.Prefix6 != lab.Prefix6 {
		t.Fatalf("A %v, B prefix %v", l.A.Addr6, l.B.Prefix6)
	}
	udpAcross(t, &l.A, &l.B, l.B.Addr6, 2)
	udpAcross(t, &l.B, &l.A, l.A.Addr, 2)
}

func TestTwoLabsAtOnce(t *testing.T) {
	labtest.RequireRoot(t)
	labs := make([]*lab.Lab, 2)
	errs := make(chan error, 2)
	for i := range labs {
		go func() {
			l, err := lab.New(lab.Options{MTU: 9000})
			labs[i] = l
			errs <- err
		}()
	}
	for range labs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, l := range labs {
		if l != nil {
			t.Cleanup(func() { l.Close() })
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if labs[0].Name == labs[1].Name || labs[0].A.NSName == labs[1].A.NSName {
		t.Fatalf("two labs share a name: %s", labs[0].Name)
	}
	for _, l := range labs {
		if l.A.MTU != 9000 || l.B.MTU != 9000 {
			t.Errorf("%s: MTU %d/%d, want 9000", l.Name, l.A.MTU, l.B.MTU)
		}
		udpAcross(t, &l.A, &l.B, l.B.Addr, 2)
	}
	for _, l := range labs {
		name := l.Name
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		assertGone(t, name)
	}
}

func TestDo(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()

	var inside netns.NsHandle
	want := errors.New("from fn")
	err = l.A.Do(func() (err error) {
		inside, err = netns.Get()
		if err != nil {
			return err
		}
		return want
	})
	if !errors.Is(err, want) {
		t.Fatalf("Do = %v, want fn's error", err)
	}
	defer inside.Close()
	if !inside.Equal(l.A.NS) || inside.Equal(before) {
		t.Errorf("fn ran in %v, want %v (not %v)", inside, l.A.NS, before)
	}
	after, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !after.Equal(before) {
		t.Errorf("caller's namespace changed from %v to %v", before, after)
	}

	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the panic of fn", p)
			}
		}()
		l.B.Do(func() error { panic("boom") })
		t.Error("Do returned after fn panicked")
	}()

	// runtime.Goexit in fn (what t.FailNow does) ends the caller's goroutine.
	done := make(chan bool)
	go func() {
		defer close(done)
		l.A.Do(func() error { runtime.Goexit(); return nil })
		t.Error("Do returned after fn called runtime.Goexit")
	}()
	<-done

	// A program started inside Do runs in the namespace.
	var out []byte
	err = l.B.Do(func() (err error) {
		out, err = exec.Command("ip", "-o", "-4", "addr", "show", "dev", l.B.Ifname).CombinedOutput()
		return err
	})
	if err != nil || !strings.Contains(string(out), "198.18.0.2/24") {
		t.Errorf("ip addr in B via Do: %v: %s", err, out)
	}
}

func TestCmd(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	// ip netns exec mounts the namespace's own /sys, so the veth is visible there.
	out, err := l.A.Cmd("cat", "/sys/class/net/"+l.A.Ifname+"/address").Output()
	if err != nil {
		t.Fatalf("Cmd cat address: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != l.A.MAC.String() {
		t.Errorf("A's MAC through Cmd = %q, want %v", got, l.A.MAC)
	}
	out, err = l.B.Cmd("ip", "-o", "-4", "addr", "show").Output()
	if err != nil || !strings.Contains(string(out), "198.18.0.2/24") || strings.Contains(string(out), "198.18.0.1/") {
		t.Errorf("Cmd ip addr in B: %v: %s", err, out)
	}
	if _, err := exec.LookPath("ping"); err != nil {
		t.Log("ping not installed; the ping check is skipped")
		return
	}
	icmptest.OnEachCPU(t, func() error {
		if out, err := l.A.Cmd("ping", "-c1", "-W2", l.B.Addr.String()).CombinedOutput(); err != nil {
			return fmt.Errorf("ping %v from A: %v: %s", l.B.Addr, err, out)
		}
		return nil
	})
}

func TestOffloads(t *testing.T) {
	labtest.RequireTool(t, "ethtool", "ethtool")
	l := labtest.New(t, lab.Options{GRO: lab.On, TSO: lab.Off, TxChecksum: lab.Off})
	for _, h := range []*lab.Host{&l.A, &l.B} {
		f, err := h.Features()
		if err != nil {
			t.Fatal(err)
		}
		if want := (lab.Features{GRO: true}); f != want {
			t.Errorf("%s after New: %+v, want %+v", h.Ifname, f, want)
		}
	}
	if err := l.SetOffloads(lab.Off, lab.On, lab.On); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*lab.Host{&l.A, &l.B} {
		f, err := h.Features()
		if err != nil {
			t.Fatal(err)
		}
		if want := (lab.Features{TSO: true, TxChecksum: true}); f != want {
			t.Errorf("%s after SetOffloads: %+v, want %+v", h.Ifname, f, want)
		}
	}
	// Default leaves a feature alone.
	if err := l.SetOffloads(lab.On, lab.Default, lab.Default); err != nil {
		t.Fatal(err)
	}
	if f, _ := l.B.Features(); f != (lab.Features{GRO: true, TSO: true, TxChecksum: true}) {
		t.Errorf("after gro on only: %+v", f)
	}
	// TSO needs transmit checksumming: the kernel drops it, SetOffloads says so.
	err := l.A.SetOffloads(lab.Default, lab.On, lab.Off)
	if !errors.Is(err, lab.ErrOffload) {
		t.Errorf("tso on with tx off = %v, want ErrOffload", err)
	}
	udpAcross(t, &l.A, &l.B, l.B.Addr, 2)
}

func TestThreaded(t *testing.T) {
	mountsBefore := sysfsMounts(t)
	l := labtest.New(t, lab.Options{Threaded: true})
	on, err := l.B.Threaded()
	if err != nil || !on {
		t.Fatalf("B threaded after New = %v, %v; want true", on, err)
	}
	if on, err := l.A.Threaded(); err != nil || on {
		t.Errorf("A threaded = %v, %v; want false", on, err)
	}
	// No program on a fresh lab's links (the AF_XDP driver's tests and the
	// bench see one attached).
	for _, h := range []*lab.Host{&l.A, &l.B} {
		if on, err := h.XDPAttached(); err != nil || on {
			t.Errorf("%s: XDP attached = %v, %v; want false", h.Ifname, on, err)
		}
	}
	if f, err := l.B.Features(); err != nil || !f.GRO {
		t.Errorf("B features %+v, %v: want GRO on for threaded NAPI", f, err)
	}
	if f, err := l.A.Features(); err != nil || f.GRO {
		t.Errorf("A features %+v, %v: want GRO left at the default, off", f, err)
	}
	for _, want := range []bool{false, true, false} {
		if err := l.SetThreaded(want); err != nil {
			t.Fatalf("SetThreaded(%v): %v", want, err)
		}
		if got, err := l.B.Threaded(); err != nil || got != want {
			t.Errorf("after SetThreaded(%v): %v, %v", want, got, err)
		}
	}
	udpAcross(t, &l.A, &l.B, l.B.Addr, 2)
	// Threaded on: B's NAPI thread can be pinned; off, there is none.
	if err := l.SetThreaded(true); err != nil {
		t.Fatal(err)
	}
	cpu := runtime.NumCPU() - 1
	if n, err := l.PinNAPI(cpu); err != nil || n < 1 {
		t.Errorf("PinNAPI(%d) = %d, %v; want at least one thread", cpu, n, err)
	}
	// A is not threaded: nothing of its own to pin, whatever B's threads
	// are named (a generated lab name can make the two names' first 15
	// bytes the same).
	if n, err := l.A.PinNAPI(cpu); err == nil {
		t.Errorf("A.PinNAPI with only B threaded = %d, nil; want an error", n)
	}
	if err := l.SetThreaded(false); err != nil {
		t.Fatal(err)
	}
	if n, err := l.PinNAPI(cpu); err == nil {
		t.Errorf("PinNAPI with threaded NAPI off = %d, nil; want an error", n)
	}
	// A has no NAPI (GRO off): the kernel refuses.
	if err := l.A.SetThreaded(true); !errors.Is(err, lab.ErrNoNAPI) {
		t.Errorf("SetThreaded on A without GRO = %v, want ErrNoNAPI", err)
	}
	// The sysfs mounts happened on discarded threads: none is seen here.
	if after := sysfsMounts(t); after != mountsBefore {
		t.Errorf("sysfs mounts in this mount namespace: %d before, %d after", mountsBefore, after)
	}
}

func sysfsMounts(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " - sysfs ")
}

func TestQueues(t *testing.T) {
	l := labtest.New(t, lab.Options{Queues: 4})
	for _, h := range []*lab.Host{&l.A, &l.B} {
		nh, err := netlink.NewHandleAt(h.NS, unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatal(err)
		}
		link, err := nh.LinkByName(h.Ifname)
		nh.Close()
		if err != nil {
			t.Fatal(err)
		}
		if a := link.Attrs(); a.NumTxQueues != 4 || a.NumRxQueues != 4 {
			t.Errorf("%s: %d tx, %d rx queues; want 4", h.Ifname, a.NumTxQueues, a.NumRxQueues)
		}
	}
}

func TestBadOptions(t *testing.T) {
	labtest.RequireRoot(t)
	for _, tc := range []struct {
		name string
		o    lab.Options
		is   error
	}{
		{"bad name", lab.Options{Name: "no good"}, lab.ErrInvalid},
		{"long name", lab.Options{Name: "abcdefghijklmn"}, lab.ErrInvalid},
		{"negative mtu", lab.Options{MTU: -5}, lab.ErrInvalid},
		{"ipv6 mtu below 1280", lab.Options{IPv6: true, MTU: 1279}, lab.ErrInvalid},
		{"threaded without gro", lab.Options{Threaded: true, GRO: lab.Off}, lab.ErrInvalid},
		{"mtu too big", lab.Options{MTU: 70000}, lab.ErrInvalid},
		{"mtu too small", lab.Options{Name: "skbtestmtu", MTU: 20}, lab.ErrInvalid},
		{"too many queues", lab.Options{Queues: lab.MaxQueues + 1}, lab.ErrInvalid},
		// Past New's checks (skipped below), this fails in the kernel
		// after the namespaces exist: New must remove them.
		{"too many queues, unchecked", lab.Options{Queues: lab.MaxQueues + 1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.is == nil {
				defer lab.SkipOptionsCheck()()
			}
			nsBefore, recBefore := ownState(t, tc.o.Name)
			l, err := lab.New(tc.o)
			if err == nil {
				l.Close()
				t.Fatalf("New(%+v) succeeded", tc.o)
			}
			t.Logf("New: %v", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not match %v", err, tc.is)
			}
			nsAfter, recAfter := ownState(t, tc.o.Name)
			if len(nsAfter) != len(nsBefore) || len(recAfter) != len(recBefore) {
				t.Errorf("namespaces before %v, after %v; records before %v, after %v", nsBefore, nsAfter, recBefore, recAfter)
			}
			if tc.o.Name != "" && validLen(tc.o.Name) {
				assertGone(t, tc.o.Name)
			}
		})
	}
}

func validLen(s string) bool { return len(s) <= lab.MaxNameLen && !strings.Contains(s, " ") }

func TestNameTaken(t *testing.T) {
	name := fmt.Sprintf("skbt%d", os.Getpid()%100000)
	l := labtest.New(t, lab.Options{Name: name})
	if l.A.NSName != name+"A" || l.B.Ifname != name+"B0" {
		t.Errorf("names %s %s", l.A.NSName, l.B.Ifname)
	}
	_, err := lab.New(lab.Options{Name: name})
	if !errors.Is(err, os.ErrExist) || !errors.Is(err, lab.ErrExist) {
		t.Fatalf("second New(%s) = %v, want lab.ErrExist and os.ErrExist", name, err)
	}
	if want := "lab: new " + name + ": lab already exists (remove it with `skb lab down --name " + name + "`)"; err.Error() != want {
		t.Errorf("second New(%s) = %q, want %q", name, err, want)
	}
	// The first lab is untouched.
	udpAcross(t, &l.A, &l.B, l.B.Addr, 1)

	// A namespace of that name made by someone else is not ours to remove.
	other := fmt.Sprintf("skbu%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", other+"B").CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", other+"B").Run()
	if _, err := lab.New(lab.Options{Name: other}); !errors.Is(err, os.ErrExist) {
		t.Fatalf("New over a foreign namespace = %v, want os.ErrExist", err)
	}
	ns := netnsList(t)
	if !ns[other+"B"] || ns[other+"A"] {
		t.Errorf("after the failed New: %v", ns)
	}
}

func TestOpenReleaseRemove(t *testing.T) {
	labtest.RequireRoot(t)
	// Records of its own: Cleanup below sees no other package's labs.
	t.Setenv(lab.RecordDirEnv, t.TempDir())
	name := fmt.Sprintf("skbo%d", os.Getpid()%100000)
	l, err := lab.New(lab.Options{Name: name, Persist: true, MTU: 4000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Remove(name) })
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.A.Do(func() error { return nil }); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Do after Release = %v, want net.ErrClosed", err)
	}
	if l.Close(); !netnsList(t)[name+"A"] {
		t.Fatal("Close after Release removed the lab")
	}
	// Persistent labs survive Cleanup.
	if removed, err := lab.Cleanup(); err != nil || contains(removed, name) {
		t.Fatalf("Cleanup removed %v, %v", removed, err)
	}
	o, err := lab.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if o.A.Ifindex != l.A.Ifindex || o.B.MAC.String() != l.B.MAC.String() || o.A.MTU != 4000 || !o.Options.Persist {
		t.Errorf("Open: A %+v B %+v opts %+v", o.A, o.B, o.Options)
	}
	udpAcross(t, &o.A, &o.B, o.B.Addr, 1)
	o.Release()
	if err := lab.Remove(name); err != nil {
		t.Fatal(err)
	}
	assertGone(t, name)
	if _, err := lab.Open(name); !errors.Is(err, lab.ErrNotFound) {
		t.Errorf("Open after Remove = %v, want ErrNotFound", err)
	}
	if err := lab.Remove(name); !errors.Is(err, lab.ErrNotFound) {
		t.Errorf("Remove twice = %v, want ErrNotFound", err)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestChildProcess is not a test: run by TestCleanupStale and
// TestUnprivileged as a child process.
func TestChildProcess(t *testing.T) {
	switch os.Getenv("SKB_LAB_CHILD") {
	case "make-and-hang":
		l, err := lab.New(lab.Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(l.Name)
		time.Sleep(30 * time.Second) // killed long before
		os.Exit(2)
	case "unprivileged":
		_, err := lab.New(lab.Options{})
		if err == nil {
			fmt.Println("New succeeded without privileges")
			os.Exit(1)
		}
		fmt.Println(err)
		if !errors.Is(err, os.ErrPermission) {
			fmt.Println("error does not match os.ErrPermission")
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func TestCleanupStale(t *testing.T) {
	labtest.RequireRoot(t)
	// Records of their own (the child's too): another package's tests,
	// which clean up stale labs as they start, do not see this one.
	t.Setenv(lab.RecordDirEnv, t.TempDir())
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$")
	cmd.Env = append(os.Environ(), "SKB_LAB_CHILD=make-and-hang")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make([]byte, 64)
	n, err := stdout.Read(line)
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	name := strings.TrimSpace(string(line[:n]))
	if !strings.HasPrefix(name, "skb"+strconv.Itoa(cmd.Process.Pid)+"_") {
		t.Fatalf("child made %q", name)
	}
	t.Cleanup(func() { lab.Remove(name) })
	// While the child lives, its lab is in use and Cleanup leaves it.
	if removed, err := lab.Cleanup(); err != nil || contains(removed, name) {
		t.Fatalf("Cleanup with the owner alive removed %v, %v", removed, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	infos, _ := lab.List()
	nsB := ""
	for _, i := range infos {
		if i.Name == name {
			nsB = i.NSB
			if !i.Stale() {
				t.Errorf("killed child's lab not stale: %+v", i)
			}
		}
	}
	// A process still inside the stale lab (a killed `lab exec`'s
	// child): Cleanup leaves it until that process is gone.
	inside := exec.Command("ip", "netns", "exec", nsB, "sleep", "10")
	if err := inside.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids, _ := lab.Procs(name); len(pids) > 0 {
			break
		}
	}
	if removed, err := lab.Cleanup(); err != nil || contains(removed, name) {
		t.Errorf("Cleanup with a process inside removed %v, %v", removed, err)
	}
	inside.Process.Kill()
	inside.Wait()
	removed, err := lab.Cleanup()
	if err != nil || !contains(removed, name) {
		t.Fatalf("Cleanup = %v, %v; want %s removed", removed, err, name)
	}
	assertGone(t, name)
}

// TestUnprivileged runs New as user nobody in a child process: it must fail
// with an error that names the privilege and matches os.ErrPermission.
func TestUnprivileged(t *testing.T) {
	labtest.RequireRoot(t)
	dir, err := os.MkdirTemp("", "skblab")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "lab.test")
	src, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestChildProcess$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SKB_LAB_CHILD=unprivileged")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v: %s", err, out)
	}
	t.Logf("as nobody: %s", out)
	if !strings.Contains(string(out), "need root or CAP_SYS_ADMIN, CAP_NET_ADMIN") {
		t.Errorf("error does not name the privilege: %s", out)
	}
}

// TestProcs checks lab.Procs: nothing inside a fresh lab, this process
// while one of its threads is inside, ErrNotFound for one not recorded. (cmd/skb's TestLabDownBusy finds a process inside.)
func TestProcs(t *testing.T) {
	l := labtest.New(t, lab.Options{})
	if pids, err := lab.Procs(l.Name); err != nil || len(pids) != 0 {
		t.Errorf("Procs(%s) = %v, %v: want none", l.Name, pids, err)
	}
	// A thread of this process inside A: the process counts.
	err := l.A.Do(func() error {
		pids, err := lab.Procs(l.Name)
		if err == nil && !slices.Contains(pids, os.Getpid()) {
			err = fmt.Errorf("pids %v lack this process (%d), one of whose threads is inside", pids, os.Getpid())
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
	if _, err := lab.Procs("skbnosuchlab"); !errors.Is(err, lab.ErrNotFound) {
		t.Errorf("Procs of no lab: %v, want ErrNotFound", err)
	}
}

// TestFreshNSDir checks that a lab made while /run/netns is a plain
// directory, as on a machine where no namespace was ever named, can be
// removed after "ip netns add" made /run/netns a mount point of its own.
// It runs in a mount namespace of its own (unshare(1)) with a fresh /run,
// so the machine's /run/netns, which other tests use at once, is not
// touched.
func TestFreshNSDir(t *testing.T) {
	labtest.RequireRoot(t)
	if os.Getenv("SKB_FRESH_NSDIR") == "" {
		labtest.RequireTool(t, "unshare", "util-linux")
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run", "^TestFreshNSDir$", "-test.v")
		cmd.Env = append(os.Environ(), "SKB_FRESH_NSDIR=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestFreshNSDir")) {
			t.Fatalf("in a mount namespace of its own: %v\n%s", err, out)
		}
		return
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=755"); err != nil {
		t.Fatalf("mount a tmpfs on /run: %v", err)
	}
	if err := os.Mkdir("/run/netns", 0o755); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("skbf%d", os.Getpid()%100000)
	l, err := lab.New(lab.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("skbg%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", other).CombinedOutput(); err != nil {
		l.Close()
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", other).Run()
	if err := l.Close(); err != nil {
		t.Errorf("removing the lab after ip netns add: %v", err)
	}
	if ns := netnsList(t); ns[name+"A"] || ns[name+"B"] || !ns[other] {
		t.Errorf("namespaces after the removal: %v", ns)
	}
}
