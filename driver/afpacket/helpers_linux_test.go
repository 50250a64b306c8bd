//go:build linux

package afpacket

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/bpf"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// TestMain fails the package when the tests pass but leave buffers in a
// pool, descriptors open or goroutines running.
func TestMain(m *testing.M) {
	// The runtime's poller and os/exec keep descriptors of their own once
	// used: use both before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.SetReadDeadline(time.Now())
		r.Close()
		w.Close()
	}
	exec.Command("true").Run()
	fds := openFDs()
	code := m.Run()
	if code == 0 {
		var leaks []string
		if err := pool.CheckLeaks(); err != nil {
			leaks = append(leaks, fmt.Sprintf("buffers: %v", err))
		}
		// Goroutines and descriptors of finished tests go away shortly.
		deadline := time.Now().Add(2 * time.Second)
		for (openFDs() > fds || len(otherGoroutines()) > 0) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := openFDs(); n > fds {
			leaks = append(leaks, fmt.Sprintf("%d descriptors open before the tests, %d after: %s", fds, n, fdNames()))
		}
		if gs := otherGoroutines(); len(gs) > 0 {
			leaks = append(leaks, fmt.Sprintf("%d goroutines still running:\n%s", len(gs), strings.Join(gs, "\n\n")))
		}
		if leaks != nil {
			fmt.Fprintf(os.Stderr, "afpacket tests leaked:\n%s\n", strings.Join(leaks, "\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// otherGoroutines returns the stacks of the goroutines other than the
// caller and the runtime's signal loop (which the fuzzing engine starts).
func otherGoroutines() []string {
	buf := make([]byte, 1<<20)
	var gs []string
	for i, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if i == 0 || strings.Contains(g, "os/signal.") || strings.TrimSpace(g) == "" {
			continue
		}
		gs = append(gs, g)
	}
	return gs
}

// fdNames lists the process's open descriptors and what they are.
func fdNames() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var names []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		names = append(names, e.Name()+"="+l)
	}
	return strings.Join(names, " ")
}

// openFDs counts the process's open descriptors.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// testPort is the UDP port the test frames go to.
const testPort = 9000

// newLab makes a lab for t, removed when t ends.
func newLab(t testing.TB) *lab.Lab {
	t.Helper()
	return labtest.New(t, lab.Options{})
}

// openIn opens a device with cfg inside h's namespace, on h's veth end when
// cfg.Ifname is empty, and closes it when t ends.
func openIn(t testing.TB, h *lab.Host, cfg Config) *Device {
	t.Helper()
	if cfg.Ifname == "" {
		cfg.Ifname = h.Ifname
	}
	var d *Device
	if err := h.Do(func() (err error) { d, err = Open(cfg); return err }); err != nil {
		t.Fatalf("open in %s: %v", h.NSName, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// listenIn binds a plain UDP socket to port (0: any) of h's address,
// inside h's namespace, and closes it when t ends.
func listenIn(t testing.TB, h *lab.Host, port int) *net.UDPConn {
	t.Helper()
	var conn *net.UDPConn
	if err := h.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: h.Addr.AsSlice(), Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// framer builds test frames from host A to host B.
type framer struct {
	uf header.UDPFrame
}

func newFramer(l *lab.Lab) *framer {
	src, _ := header.MACFrom(l.A.MAC)
	dst, _ := header.MACFrom(l.B.MAC)
	return &framer{uf: header.UDPFrame{
		Source: src, Destination: dst,
		SourceIP: l.A.Addr, DestinationIP: l.B.Addr,
		SourcePort: 12345, DestinationPort: testPort,
	}}
}

// fill writes into the empty buffer b a frame carrying seq in the first four
// bytes of a payload of payload bytes.
func (f *framer) fill(b *skb.Buff, seq uint32, payload int) {
	hl := f.uf.HeaderLen()
	fr := b.Put(hl + payload)
	p := fr[hl:]
	for i := range p {
		p[i] = byte(i)
	}
	binary.BigEndian.PutUint32(p, seq)
	if _, err := header.BuildUDP(fr, &f.uf); err != nil {
		panic(err)
	}
}

// seqOf returns the sequence number and payload length of a test frame, or
// ok false for another frame.
func seqOf(b *skb.Buff) (seq uint32, payload int, ok bool) {
	d := b.Data()
	f, err := header.ParseFrame(d)
	if err != nil || f.Protocol != header.IPProtoUDP || f.PayloadOffset == 0 || f.Fragment {
		return 0, 0, false
	}
	u := header.UDP(d[f.TransportOffset:f.End])
	if u.DestinationPort() != testPort {
		return 0, 0, false
	}
	pl := u.Payload()
	if len(pl) < 4 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(pl), len(pl), true
}

// sendN transmits n test frames of payload bytes from d with bursts of
// burst, seq from first.
func sendN(t testing.TB, d *Device, fr *framer, first uint32, n, payload, burst int) {
	t.Helper()
	c := d.Cache()
	for i := range n {
		b, err := c.Alloc(fr.uf.HeaderLen() + payload)
		if err != nil {
			t.Fatal(err)
		}
		fr.fill(b, first+uint32(i), payload)
		more := (i+1)%burst != 0 && i != n-1
		if err := d.Xmit(b, more); err != nil {
			t.Fatalf("xmit %d: %v", i, err)
		}
	}
}

// collect polls d until want test frames arrived or timeout passed, calling
// fn for each test frame before freeing it, and returns how many arrived.
func collect(t testing.TB, d *Device, want int, timeout time.Duration, fn func(b *skb.Buff, seq uint32, payload int)) int {
	t.Helper()
	got := 0
	deadline := time.Now().Add(timeout)
	h := func(b *skb.Buff) {
		if seq, pl, ok := seqOf(b); ok {
			got++
			if fn != nil {
				fn(b, seq, pl)
			}
		}
		d.Cache().Free(b)
	}
	for got < want && time.Now().Before(deadline) {
		if _, err := d.Poll(64, h); err != nil {
			t.Fatal(err)
		}
		if got < want {
			if err := d.Wait(20 * time.Millisecond); err != nil && !isTimeout(err) {
				t.Fatal(err)
			}
		}
	}
	return got
}

func isTimeout(err error) bool { return err != nil && errorsIs(err, netdev.ErrTimeout) }

// rawRetA is a classic BPF program that returns the accumulator.
var rawRetA = []bpf.RawInstruction{{Op: 0x16}}

// buildUDP writes fr's headers over the frame f, whose payload is in place.
func buildUDP(f []byte, fr *framer) (header.Frame, error) { return header.BuildUDP(f, &fr.uf) }
