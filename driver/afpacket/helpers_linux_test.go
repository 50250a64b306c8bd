//go:build linux

package afpacket

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/bpf"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/lab"
	"github.com/skbdev/skb/lab/labtest"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool/pooltest"
	"github.com/skbdev/skb/skb"
)

func TestMain(m *testing.M) { pooltest.Main(m) }

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

var _ = netip.Addr{}

// rawRetA is a classic BPF program that returns the accumulator.
var rawRetA = []bpf.RawInstruction{{Op: 0x16}}

// buildUDP writes fr's headers over the frame f, whose payload is in place.
func buildUDP(f []byte, fr *framer) (header.Frame, error) { return header.BuildUDP(f, &fr.uf) }
