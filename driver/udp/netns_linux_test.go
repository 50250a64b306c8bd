//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
)

// onThread runs fn on an OS thread of its own, locked to it, so that fn may
// change what belongs to the thread (its network namespace, its
// capabilities), then runs undo to put the thread back as it was. When undo
// fails the thread is thrown away (the goroutine exits locked to it). Sockets
// opened by fn keep their namespace alive after the thread left it.
func onThread(t *testing.T, fn, undo func() error) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		err := fn()
		if uerr := undo(); uerr != nil {
			done <- errors.Join(err, uerr)
			return // still locked: the thread goes away
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// inNetns runs fn in a new network namespace of its own, with loopback up
// and the given ip and tc commands run there first. The namespace goes away
// with the last socket opened in it; nothing is left to clean up.
func inNetns(t *testing.T, cmds [][]string, fn func() error) {
	t.Helper()
	labtest.RequireRoot(t)
	labtest.RequireTool(t, "nsenter", "util-linux")
	labtest.RequireTool(t, "ip", "iproute2")
	labtest.RequireTool(t, "tc", "iproute2")
	orig := -1
	onThread(t, func() error {
		var err error
		if orig, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare CLONE_NEWNET: %w", err)
		}
		ns := fmt.Sprintf("--net=/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		for _, c := range append([][]string{{"ip", "link", "set", "lo", "up"}}, cmds...) {
			out, err := exec.Command("nsenter", append([]string{ns}, c...)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
			}
		}
		return fn()
	}, func() error {
		if orig < 0 {
			return errors.New("no namespace to go back to")
		}
		defer unix.Close(orig)
		return unix.Setns(orig, unix.CLONE_NEWNET)
	})
}

// TestGSOFallbackEMSGSIZE sends a GSO batch whose segments are larger than
// the path MTU (loopback set to 1500 bytes in a namespace of the test's
// own): the kernel refuses the UDP_SEGMENT send with EMSGSIZE, the driver
// turns GSO off, counts the reason and sends the batch plainly (the kernel
// then fragments each datagram, and all arrive).
func TestGSOFallbackEMSGSIZE(t *testing.T) {
	var tx, rx *Device
	inNetns(t, [][]string{{"ip", "link", "set", "lo", "mtu", "1500"}}, func() error {
		var err error
		if rx, err = Open(Config{Local: lo4, RcvBuf: 1 << 20, RecvSize: 4000}); err != nil {
			return err
		}
		tx, err = Open(Config{Remote: rx.LocalAddr(), GSO: true})
		return err
	})
	t.Cleanup(func() { tx.Close(); rx.Close() })
	sendRun(t, tx, 0, 10, 2000)
	g := collect(t, rx, 10, 2*time.Second)
	if len(g) != 10 {
		t.Fatalf("got %d of 10; tx %+v", len(g), tx.Stats())
	}
	for i, p := range g {
		if p.bad || p.seq != uint32(i) || p.n != 2000 {
			t.Fatalf("datagram %d: %+v", i, p)
		}
	}
	st := tx.Stats()
	if tx.GSO() || st.GSOFallback[netdev.FallbackEMSGSIZE] != 1 || st.TxPackets != 10 || st.TxDroppedTotal() != 0 {
		t.Errorf("GSO %v, counters %+v", tx.GSO(), st)
	}
}

// TestGSONoChecksumOffload sends GSO batches out of a veth whose transmit
// checksumming is off (ethtool -K tx off, in a namespace of the test's
// own). Kernels before udp_send_skb learned to checksum GSO segments in
// software refuse such a UDP_SEGMENT send with EIO: the driver then turns
// GSO off, counts gso_fallback_eio and sends the same datagrams plainly
// (the branch the EINVAL and EMSGSIZE tests take). Newer kernels, 6.18
// among them, send it, and GSO stays on. Either way all 20 datagrams are
// sent, none dropped. (EIO is left to UDP-Lite and IPsec routes, which a
// kernel without ESP or AH cannot make.) The far end is a permanent
// neighbour entry on the test's own veth: the frames go nowhere else.
func TestGSONoChecksumOffload(t *testing.T) {
	labtest.RequireTool(t, "ethtool", "ethtool")
	var tx *Device
	inNetns(t, append(vethNeighbour("skbeio"), []string{"ethtool", "-K", "skbeio0", "tx", "off"}), func() error {
		var err error
		tx, err = Open(Config{Remote: netip.MustParseAddrPort("198.18.9.2:9"), GSO: true})
		return err
	})
	t.Cleanup(func() { tx.Close() })
	if !tx.GSO() {
		t.Fatal("GSO off at open: the probe refused UDP_SEGMENT")
	}
	sendRun(t, tx, 0, 10, 500)
	sendRun(t, tx, 10, 10, 500)
	st := tx.Stats()
	fell := st.GSOFallback[netdev.FallbackEIO]
	if st.TxPackets != 20 || st.TxDroppedTotal() != 0 || st.GSOFallbackTotal() != fell || fell > 1 || tx.GSO() != (fell == 0) {
		t.Errorf("GSO %v, counters %+v; want the 20 datagrams sent, and either GSO on or one gso_fallback_eio with GSO off", tx.GSO(), st)
	}
	t.Logf("GSO %v, gso_fallback_eio %d, %d doorbells", tx.GSO(), fell, st.TxDoorbells)
}

// TestTxFull fills the send buffer of a socket whose packets a token bucket
// (tc tbf at 8 kbit/s on loopback, in a namespace of the test's own) holds
// back: the doorbell gets EAGAIN, at once without a TxTimeout and after it
// with one, and drops the unsent rest of the batch, counted, freeing every
// buffer.
func TestTxFull(t *testing.T) {
	for _, timeout := range []time.Duration{-1, 20 * time.Millisecond} {
		t.Run(fmt.Sprint(timeout), func(t *testing.T) {
			p, err := pool.New(pool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			var tx, rx *Device
			inNetns(t, [][]string{{"tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "8kbit", "burst", "1600", "limit", "1000000"}}, func() error {
				var err error
				if rx, err = Open(Config{Config: netdev.Config{Pool: p}, Local: lo4}); err != nil {
					return err
				}
				tx, err = Open(Config{Config: netdev.Config{Pool: p}, Remote: rx.LocalAddr(), SndBuf: 1, TxTimeout: timeout})
				return err
			})
			const n = 64
			start := time.Now()
			var xerr error
			for i := range n {
				if err := tx.Xmit(fill(t, tx, uint32(i), 1000), i < n-1); err != nil {
					xerr = err
				}
			}
			el := time.Since(start)
			st := tx.Stats()
			if !errors.Is(xerr, unix.EAGAIN) || !strings.HasPrefix(xerr.Error(), "udp: sendmmsg: ") {
				t.Errorf("xmit into a full socket: %v", xerr)
			}
			if st.TxPackets+st.TxDropped[netdev.DropRingFull] != n || st.TxDropped[netdev.DropRingFull] == 0 || st.TxRingFull != 1 {
				t.Errorf("counters %+v", st)
			}
			if timeout > 0 && el < timeout {
				t.Errorf("gave up after %v, before the timeout of %v", el, timeout)
			}
			tx.Close()
			rx.Close()
			if err := p.Close(); err != nil {
				t.Error(err)
			}
			t.Logf("sent %d, dropped %d in %v", st.TxPackets, st.TxDropped[netdev.DropRingFull], el)
		})
	}
}

// TestUnprivileged opens a device on a thread without CAP_NET_ADMIN: the
// socket buffer sizes fall back from SO_SNDBUFFORCE and SO_RCVBUFFORCE to
// SO_SNDBUF and SO_RCVBUF, which the kernel caps at wmem_max and rmem_max,
// and a BusyPoll above net.core.busy_read, which SO_BUSY_POLL refuses, still
// opens (and spins).
func TestUnprivileged(t *testing.T) {
	labtest.RequireRoot(t)
	wmax, rmax := sysctl(t, "net/core/wmem_max"), sysctl(t, "net/core/rmem_max")
	var d *Device
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	onThread(t, func() error {
		if err := unix.Capget(&hdr, &caps[0]); err != nil {
			return err
		}
		drop := caps
		drop[0].Effective &^= 1 << unix.CAP_NET_ADMIN
		if err := unix.Capset(&hdr, &drop[0]); err != nil {
			return err
		}
		var err error
		d, err = Open(Config{Local: lo4, SndBuf: 64 << 20, RcvBuf: 64 << 20, BusyPoll: time.Second})
		return err
	}, func() error {
		return unix.Capset(&hdr, &caps[0])
	})
	t.Cleanup(func() { d.Close() })
	for opt, want := range map[int]int{unix.SO_SNDBUF: 2 * wmax, unix.SO_RCVBUF: 2 * rmax} {
		v, err := unix.GetsockoptInt(d.Fd(), unix.SOL_SOCKET, opt)
		if err != nil {
			t.Fatal(err)
		}
		if v != want {
			t.Errorf("option %d: %d, want the cap %d", opt, v, want)
		}
	}
	if err := d.Wait(time.Millisecond); err != netdev.ErrTimeout {
		t.Errorf("busy Wait: %v", err)
	}
}

func sysctl(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// vethNeighbour returns the commands that make a veth pair NAME0-NAME1 in
// the test's namespace, up, with 198.18.9.1/24 on NAME0 and a permanent
// neighbour entry for 198.18.9.2 behind it: frames to 198.18.9.2 go out of
// NAME0 to its peer in the same namespace, and nowhere else.
func vethNeighbour(name string) [][]string {
	a, b := name+"0", name+"1"
	return [][]string{
		{"ip", "link", "add", a, "type", "veth", "peer", "name", b},
		{"ip", "link", "set", a, "up"},
		{"ip", "link", "set", b, "up"},
		{"ip", "addr", "add", "198.18.9.1/24", "dev", a},
		{"ip", "neigh", "add", "198.18.9.2", "lladdr", "02:00:00:00:00:02", "dev", a, "nud", "permanent"},
	}
}

// TestLoopbackSourceEINVAL sends from a socket bound to 127.0.0.1 to an
// address beyond the loopback interface (198.18.9.2, a neighbour on the
// test's own veth in a namespace of its own): the kernel refuses it with
// EINVAL, and the error says why, alone and from a batch's doorbell.
func TestLoopbackSourceEINVAL(t *testing.T) {
	var tx *Device
	inNetns(t, vethNeighbour("skblo"), func() error {
		var err error
		tx, err = Open(Config{Local: netip.MustParseAddrPort("127.0.0.1:0")})
		return err
	})
	t.Cleanup(func() { tx.Close() })
	dst := netip.MustParseAddrPort("198.18.9.2:9")
	const why = "(the socket is bound to 127.0.0.1, a loopback address, which reaches this host's own addresses only)"
	for _, more := range []bool{false, true} {
		err := tx.XmitTo(fill(t, tx, 0, 64), dst, more)
		if more {
			err = tx.XmitTo(fill(t, tx, 1, 64), dst, false)
		}
		if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), why) {
			t.Errorf("more %v: %v; want EINVAL saying %s", more, err, why)
		}
	}
	if st := tx.Stats(); st.TxPackets != 0 || st.TxDroppedTotal() != 3 {
		t.Errorf("counters %+v: want the 3 datagrams dropped, none sent", st)
	}
}

// TestGSOKeptOnRouteEINVAL sends a GSO run that the kernel refuses for its
// route, not its segmentation (from a socket bound to 127.0.0.1 to
// 198.18.9.2, a neighbour on the test's own veth): the datagrams are
// dropped as errors, and GSO stays on for the next run, counted as no
// fallback, which then goes out as one message.
func TestGSOKeptOnRouteEINVAL(t *testing.T) {
	var tx, rx *Device
	inNetns(t, vethNeighbour("skbgso"), func() error {
		var err error
		if rx, err = Open(Config{Local: lo4}); err != nil {
			return err
		}
		tx, err = Open(Config{Local: lo4, GSO: true})
		return err
	})
	t.Cleanup(func() { tx.Close(); rx.Close() })
	far := netip.MustParseAddrPort("198.18.9.2:9")
	for i := range 8 {
		tx.XmitTo(fill(t, tx, uint32(i), 1000), far, i < 7)
	}
	st := tx.Stats()
	if !tx.GSO() || st.GSOFallbackTotal() != 0 || st.TxDropped[netdev.DropError] != 8 || st.TxPackets != 0 {
		t.Fatalf("after a run refused for its route: GSO %v, gso_fallback %v, tx_dropped_error %d, tx_packets %d; want GSO on, no fallback, 8 dropped",
			tx.GSO(), st.GSOFallback, st.TxDropped[netdev.DropError], st.TxPackets)
	}
	doorbells := st.TxDoorbells
	for i := range 8 {
		if err := tx.XmitTo(fill(t, tx, uint32(i), 1000), rx.LocalAddr(), i < 7); err != nil {
			t.Fatal(err)
		}
	}
	if g := collect(t, rx, 8, time.Second); len(g) != 8 {
		t.Fatalf("got %d of 8", len(g))
	}
	if st := tx.Stats(); st.TxDoorbells != doorbells+1 || st.GSOFallbackTotal() != 0 {
		t.Errorf("the good run took %d doorbells (want 1, one GSO message), gso_fallback %v", st.TxDoorbells-doorbells, st.GSOFallback)
	}
}
