//go:build linux

package afpacket

import (
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// past32 is 1<<32 where an int holds it (0 where it does not: the case
// that uses it is skipped there).
var past32 = 1 << shift32

var shift32 = 32

func TestOpenErrors(t *testing.T) {
	labtest.RequireRoot(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"no name", Config{}, ErrConfig},
		{"missing", Config{Ifname: "nosuchif0"}, unix.ENODEV},
		{"block size", Config{Ifname: "lo", BlockSize: 1000}, ErrConfig},
		{"frame size", Config{Ifname: "lo", FrameSize: 100}, ErrConfig},
		{"tx frames", Config{Ifname: "lo", TxFrames: 8}, ErrConfig},
		{"fanout flags", Config{Ifname: "lo", FanoutFlags: FanoutFlagRollover}, ErrConfig},
		{"fanout tx only", Config{Ifname: "lo", Fanout: FanoutLB, TxOnly: true}, ErrConfig},
		{"tx mode", Config{Ifname: "lo", TxMode: 9}, ErrConfig},
		{"snaplen with filter returning A", Config{Ifname: "lo", SnapLen: 64, Filter: rawRetA}, ErrConfig},
		{"frames past 32 bits", Config{Ifname: "lo", BlockCount: 1 << 30}, ErrConfig},
		{"block size past 32 bits", Config{Ifname: "lo", BlockSize: past32, FrameSize: 1 << 16}, ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "block size past 32 bits" && strconv.IntSize < 64 {
				t.Skip("an int holds no block size past 32 bits")
			}
			d, err := Open(tc.cfg)
			if err == nil {
				d.Close()
				t.Fatal("opened")
			}
			prefix := "afpacket: open " + tc.cfg.Ifname + ": "
			if tc.cfg.Ifname == "" {
				prefix = "afpacket: open: "
			}
			if tc.want == ErrConfig {
				prefix += "invalid config: "
			}
			if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("error %q, want one wrapping %v starting %q", err, tc.want, prefix)
			}
			if tc.want == ErrConfig && !errors.Is(err, netdev.ErrConfig) {
				t.Fatalf("error %q does not match netdev.ErrConfig", err)
			}
		})
	}
}

// TestOpenNoPermission drops CAP_NET_RAW from this thread's effective set:
// Open's error then matches os.ErrPermission.
func TestOpenNoPermission(t *testing.T) {
	labtest.RequireRoot(t)
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var saved, drop [2]unix.CapUserData
	if err := unix.Capget(&hdr, &saved[0]); err != nil {
		t.Fatal(err)
	}
	drop = saved
	drop[0].Effective &^= 1 << unix.CAP_NET_RAW
	if err := unix.Capset(&hdr, &drop[0]); err != nil {
		t.Fatal(err)
	}
	d, err := Open(Config{Ifname: "lo"})
	if unix.Capset(&hdr, &saved[0]) == nil {
		runtime.UnlockOSThread() // else the thread ends with the test's goroutine
	}
	if err == nil {
		d.Close()
		t.Fatal("opened without CAP_NET_RAW")
	}
	if !errors.Is(err, os.ErrPermission) || !strings.HasPrefix(err.Error(), "afpacket: open lo: ") {
		t.Fatalf("error %q, want one matching os.ErrPermission", err)
	}
}

// TestXmitErrors: a frame the kernel would refuse is dropped with an error
// and counted, and the doorbell is rung for what was queued before it.
func TestXmitErrors(t *testing.T) {
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			rx := openIn(t, &l.B, Config{})
			tx := openIn(t, &l.A, Config{TxMode: mode})
			c := tx.Cache()
			queue := func(seq uint32) {
				b, _ := c.Alloc(200)
				fr.fill(b, seq, 64)
				if err := tx.Xmit(b, true); err != nil {
					t.Fatal(err)
				}
			}
			queue(0)
			queue(1)
			short, _ := c.Alloc(20)
			short.Put(10)
			err := tx.Xmit(short, true)
			if !errors.Is(err, ErrShortFrame) || !strings.HasPrefix(err.Error(), "afpacket: xmit "+l.A.Ifname+": ") {
				t.Fatalf("short frame: %v", err)
			}
			queue(2)
			big, _ := c.Alloc(1600)
			fr.fill(big, 99, 1500-28+1) // 1515 bytes, untagged
			if err := tx.Xmit(big, true); !errors.Is(err, netdev.ErrTooBig) {
				t.Fatalf("1515-byte frame: %v", err)
			}
			if got := collect(t, rx, 3, 3*time.Second, nil); got != 3 {
				t.Fatalf("received %d of the 3 frames queued before the errors", got)
			}
			s := tx.Stats()
			if s.TxPackets != 3 || s.TxDropped[netdev.DropMalformed] != 1 || s.TxDropped[netdev.DropTooBig] != 1 {
				t.Fatalf("stats %+v", s)
			}
			if tx.TxAvail() != 64 {
				t.Fatalf("TxAvail %d after the doorbell, want 64", tx.TxAvail())
			}
		})
	}
}

// TestClosed: after Close every method fails with net.ErrClosed, Xmit still
// frees its buffer, and Close wakes a blocked Wait.
func TestClosed(t *testing.T) {
	for _, mode := range []TxMode{TxMmsg, TxRing} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLab(t)
			fr := newFramer(l)
			p, err := pool.New(pool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			d := openIn(t, &l.A, Config{TxMode: mode, Config: netdev.Config{Pool: p}})
			// One frame queued and never kicked: Close drops it.
			b, _ := d.Cache().Alloc(200)
			fr.fill(b, 0, 64)
			if err := d.Xmit(b, true); err != nil {
				t.Fatal(err)
			}
			late, _ := p.Alloc(200)
			if err := d.Wait(0); !errors.Is(err, netdev.ErrTimeout) {
				t.Fatalf("Wait(0): %v", err)
			}
			if err := d.Wait(5 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Wait(5ms): %v", err)
			}
			woke := make(chan error)
			go func() { woke <- d.Wait(-1) }()
			time.Sleep(20 * time.Millisecond)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-woke:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("Wait woken by Close: %v", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Close did not wake Wait")
			}
			if s := d.Stats(); s.TxDropped[netdev.DropClosed] != 1 {
				t.Errorf("tx_dropped_closed %d, want 1", s.TxDropped[netdev.DropClosed])
			}
			checks := map[string]error{
				"xmit":  d.Xmit(late, false),
				"flush": d.Flush(),
				"wait":  d.Wait(time.Second),
				"close": d.Close(),
			}
			_, checks["poll"] = d.Poll(1, func(*skb.Buff) {})
			for op, err := range checks {
				if !errors.Is(err, net.ErrClosed) || !strings.HasPrefix(err.Error(), "afpacket: "+op+" "+l.A.Ifname+": ") {
					t.Errorf("%s after Close: %v", op, err)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatalf("pool: %v", err)
			}
		})
	}
}

// TestOutgoing: frames the receiving host sends itself are not delivered by
// default, and are with Config.Outgoing.
func TestOutgoing(t *testing.T) {
	l := newLab(t)
	def := openIn(t, &l.B, Config{})
	out := openIn(t, &l.B, Config{Outgoing: true})
	conn := listenIn(t, &l.B, 0)
	dst := &net.UDPAddr{IP: l.A.Addr.AsSlice(), Port: testPort}
	for range 5 {
		if _, err := conn.WriteToUDP(make([]byte, 8), dst); err != nil {
			t.Fatal(err)
		}
	}
	count := func(d *Device, wait time.Duration) int {
		n := 0
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			d.Poll(64, func(b *skb.Buff) {
				if b.Protocol() == 0x0800 && b.Data()[23] == unix.IPPROTO_UDP {
					n++
				}
				d.Cache().Free(b)
			})
			d.Wait(5 * time.Millisecond)
		}
		return n
	}
	if n := count(out, 300*time.Millisecond); n != 5 {
		t.Fatalf("Outgoing device saw %d of 5 outgoing datagrams", n)
	}
	if n := count(def, 50*time.Millisecond); n != 0 {
		t.Fatalf("default device saw %d outgoing datagrams", n)
	}
}

// TestWaitLinkDownThenRemoved waits without a timeout on an interface
// that goes down: Wait goes on waiting (nothing arrives until it is up),
// and returns ENODEV once the interface is removed, which says nothing to
// the unhooked socket: within a second, not never.
func TestWaitLinkDownThenRemoved(t *testing.T) {
	l := newLab(t)
	d := openIn(t, &l.B, Config{})
	errc := make(chan error, 1)
	go func() { errc <- d.Wait(-1) }()
	time.Sleep(50 * time.Millisecond)
	if out, err := l.B.Cmd("ip", "link", "set", l.B.Ifname, "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set down: %v: %s", err, out)
	}
	select {
	case err := <-errc:
		t.Fatalf("Wait(-1) returned %v when the interface went down", err)
	case <-time.After(300 * time.Millisecond):
	}
	if out, err := l.B.Cmd("ip", "link", "del", l.B.Ifname).CombinedOutput(); err != nil {
		t.Fatalf("ip link del: %v: %s", err, out)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, unix.ENODEV) {
			t.Errorf("Wait(-1) after the interface was removed: %v, want ENODEV", err)
		}
	case <-time.After(2 * time.Second):
		d.Close() // wakes it
		<-errc
		t.Fatal("Wait(-1) had not returned 2 s after the interface was removed")
	}
}

// TestCloseInPollWithStats closes the device from Poll's handler while
// another goroutine calls Stats: whichever call leaves the device last
// tears it down, so no round leaves a descriptor open (before, a Stats
// that outlasted the Poll left the socket and the eventfd open).
func TestCloseInPollWithStats(t *testing.T) {
	labtest.RequireRoot(t)
	ln, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // drain the listener
		buf := make([]byte, 2048)
		for {
			if _, err := ln.Read(buf); err != nil {
				return
			}
		}
	}()
	tx, err := net.DialUDP("udp4", nil, ln.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	for round := range 20 {
		before := fds()
		d, err := Open(Config{Ifname: "lo", BlockCount: 2})
		if err != nil {
			t.Fatal(err)
		}
		stop, statsDone := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(statsDone)
			for {
				select {
				case <-stop:
					return
				default:
					d.Stats()
				}
			}
		}()
		closed := false
		for deadline := time.Now().Add(2 * time.Second); !closed && time.Now().Before(deadline); {
			tx.Write([]byte("close in poll"))
			d.Wait(10 * time.Millisecond)
			d.Poll(8, func(b *skb.Buff) {
				b.Free()
				if !closed {
					closed = true
					if err := d.Close(); err != nil {
						t.Errorf("round %d: Close in the handler: %v", round, err)
					}
				}
			})
		}
		close(stop)
		<-statsDone
		if !closed {
			d.Close()
			t.Fatalf("round %d: no frame arrived on lo in 2 s", round)
		}
		if after := fds(); after != before {
			t.Fatalf("round %d: %d descriptors before Open, %d after Close in the handler", round, before, after)
		}
	}
}
