package header

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/pool/pooltest"
	"github.com/skbdev/skb/skb"
)

// TestMain fails the package when a test leaks a buffer.
func TestMain(m *testing.M) { pooltest.Main(m) }

// newCache returns a cache of a fresh debug pool, closed and checked for
// leaks when the test ends.
func newCache(t testing.TB) *pool.Cache {
	t.Helper()
	p, err := pool.New(pool.Config{Debug: true, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	t.Cleanup(func() {
		c.Close()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// layout is a buffer's shape: linear bytes, page frag sizes, and frag list
// members of their own shape.
type layout struct {
	linear int
	frags  []int
	list   []layout
}

func (l layout) len() int {
	n := l.linear
	for _, f := range l.frags {
		n += f
	}
	for _, m := range l.list {
		n += m.len()
	}
	return n
}

// buildBuff makes a buffer of shape l holding data (len(data) == l.len()).
// The caller owns it.
func buildBuff(t testing.TB, c *pool.Cache, l layout, data []byte) *skb.Buff {
	t.Helper()
	b, err := c.Alloc(l.linear)
	if err != nil {
		t.Fatal(err)
	}
	copy(b.Put(l.linear), data)
	data = data[l.linear:]
	for _, n := range l.frags {
		p, off, err := c.AllocFrag(n)
		if err != nil {
			t.Fatal(err)
		}
		copy(p.Bytes()[off:off+n], data)
		data = data[n:]
		b.AddRxFrag(p, off, n)
	}
	for _, m := range l.list {
		b.AddFragList(buildBuff(t, c, m, data[:m.len()]))
		data = data[m.len():]
	}
	if b.Len() != l.len() {
		t.Fatalf("built %d bytes, want %d", b.Len(), l.len())
	}
	return b
}

var buffLayouts = map[string]layout{
	"linear":             {linear: 1500},
	"odd frags":          {linear: 41, frags: []int{1, 7, 1000, 3}},
	"head split":         {linear: 14 + 20 + 8 + 128, frags: []int{4096, 4096, 333}},
	"frag list":          {linear: 100, list: []layout{{linear: 9}, {linear: 10, frags: []int{5, 6}}, {linear: 1}}},
	"nested list":        {linear: 3, frags: []int{3}, list: []layout{{linear: 5, list: []layout{{linear: 7, frags: []int{9}}}}}},
	"empty linear frags": {linear: 0, frags: []int{17, 18}},
}

func TestChecksumBuff(t *testing.T) {
	c := newCache(t)
	r := rand.New(rand.NewPCG(21, 22))
	for name, l := range buffLayouts {
		t.Run(name, func(t *testing.T) {
			data := randBytes(r, l.len())
			b := buildBuff(t, c, l, data)
			defer c.Free(b)
			flat := make([]byte, b.Len())
			if err := b.CopyBits(0, flat); err != nil {
				t.Fatal(err)
			}
			if string(flat) != string(data) {
				t.Fatal("CopyBits differs from the data put in")
			}
			check := func(off, n int) {
				initial := uint16(off * 31)
				got, err := ChecksumBuff(b, off, n, initial)
				if err != nil {
					t.Fatalf("ChecksumBuff(%d, %d): %v", off, n, err)
				}
				if want := Checksum(flat[off:off+n], initial); got != want {
					t.Fatalf("ChecksumBuff(%d, %d) = %#04x, contiguous %#04x", off, n, got, want)
				}
			}
			check(0, len(flat))
			for off := 0; off <= len(flat) && off < 64; off++ {
				check(off, len(flat)-off)
				check(off, 0)
			}
			for range 300 {
				off := r.IntN(len(flat) + 1)
				check(off, r.IntN(len(flat)-off+1))
			}
			for _, bad := range [][2]int{{-1, 1}, {0, -1}, {0, len(flat) + 1}, {len(flat), 1}, {len(flat) + 1, 0}} {
				if _, err := ChecksumBuff(b, bad[0], bad[1], 0); !errors.Is(err, skb.ErrRange) {
					t.Fatalf("ChecksumBuff(%d, %d): err %v, want skb.ErrRange", bad[0], bad[1], err)
				}
			}
		})
	}
}

// udpBuff builds a UDP/IPv4 frame of frameLen bytes with BuildUDP, left
// CHECKSUM_PARTIAL, and spreads it over a buffer of shape l (l.len() ==
// frameLen). It returns the buffer and the frame with its checksum
// finished the contiguous way.
func udpBuff(t *testing.T, c *pool.Cache, l layout, v6 bool) (*skb.Buff, []byte) {
	t.Helper()
	f := udp4Frame()
	if v6 {
		f = udp6Frame()
	}
	f.PartialChecksum = true
	frame := randBytes(rand.New(rand.NewPCG(uint64(l.len()), 5)), l.len())
	fr, err := BuildUDP(frame, f)
	if err != nil {
		t.Fatal(err)
	}
	b := buildBuff(t, c, l, frame)
	if err := b.SetChecksumPartial(fr.TransportOffset, 6); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), frame...)
	if err := FinishChecksum(want, fr.TransportOffset, 6); err != nil {
		t.Fatal(err)
	}
	return b, want
}

func TestFinishChecksumBuff(t *testing.T) {
	c := newCache(t)
	shapes := map[string]layout{
		"linear":     {linear: 1500},
		"head split": {linear: 14 + 20 + 8 + 128, frags: []int{1001, 4096, 3}},
		"odd frags":  {linear: 43, frags: []int{1, 1, 77}},
		"frag list":  {linear: 64, frags: []int{7}, list: []layout{{linear: 100}, {linear: 1, frags: []int{1400}}}},
	}
	for name, l := range shapes {
		for _, v6 := range []bool{false, true} {
			l := l
			if v6 {
				l.linear += 20 // the IPv6 header is 20 bytes longer
			}
			t.Run(name+map[bool]string{false: " v4", true: " v6"}[v6], func(t *testing.T) {
				b, want := udpBuff(t, c, l, v6)
				defer c.Free(b)
				if err := FinishChecksumBuff(b, c); err != nil {
					t.Fatal(err)
				}
				if b.IPSummed() != skb.ChecksumNone {
					t.Fatalf("state %v, want CHECKSUM_NONE", b.IPSummed())
				}
				got := make([]byte, b.Len())
				if err := b.CopyBits(0, got); err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Fatal("finished buffer differs from the contiguous finish")
				}
				fr, err := ParseFrame(got)
				if err != nil {
					t.Fatal(err)
				}
				if err := fr.VerifyChecksum(got); err != nil {
					t.Fatal(err)
				}
				// Nothing left to do the second time.
				if err := FinishChecksumBuff(b, c); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestFinishChecksumBuffCloned(t *testing.T) {
	c := newCache(t)
	b, want := udpBuff(t, c, layout{linear: 200, frags: []int{300}}, false)
	defer c.Free(b)
	before := append([]byte(nil), b.Data()...)
	cl, err := b.Clone(c)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(cl)

	if err := FinishChecksumBuff(cl, nil); !errors.Is(err, ErrCloned) {
		t.Fatalf("nil allocator: err %v, want ErrCloned", err)
	}
	if err := FinishChecksumBuff(cl, c); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, cl.Len())
	if err := cl.CopyBits(0, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("clone's finished checksum differs")
	}
	if string(b.Data()) != string(before) || b.IPSummed() != skb.ChecksumPartial {
		t.Fatal("finishing the clone changed the original")
	}
}

func TestFinishChecksumBuffErrors(t *testing.T) {
	c := newCache(t)

	t.Run("gso", func(t *testing.T) {
		b, _ := udpBuff(t, c, layout{linear: 1000}, false)
		defer c.Free(b)
		b.SetGSO(400, 2, skb.GSOUDPL4)
		if err := FinishChecksumBuff(b, c); !errors.Is(err, ErrGSO) {
			t.Fatalf("err %v, want ErrGSO", err)
		}
		if b.IPSummed() != skb.ChecksumPartial {
			t.Fatal("state changed")
		}
	})
	t.Run("start pulled", func(t *testing.T) {
		b, _ := udpBuff(t, c, layout{linear: 100}, false)
		defer c.Free(b)
		b.Pull(50) // past csum_start (42)
		if err := FinishChecksumBuff(b, c); !errors.Is(err, ErrBadChecksumOffset) {
			t.Fatalf("err %v, want ErrBadChecksumOffset", err)
		}
	})
	t.Run("not partial", func(t *testing.T) {
		b, _ := udpBuff(t, c, layout{linear: 100}, false)
		defer c.Free(b)
		b.SetChecksumUnnecessary()
		before := append([]byte(nil), b.Data()...)
		if err := FinishChecksumBuff(b, c); err != nil || string(b.Data()) != string(before) || b.IPSummed() != skb.ChecksumUnnecessary {
			t.Fatalf("err %v, or the buffer changed", err)
		}
	})
}

func TestSkbZeroAllocs(t *testing.T) {
	c := newCache(t)
	b, _ := udpBuff(t, c, layout{linear: 170, frags: []int{1000, 330}}, false)
	defer c.Free(b)
	start, off := b.CsumStart(), b.CsumOffset()
	field := b.Data()[start+off : start+off+2]
	pseudo := [2]byte(field)
	var sink uint16
	n := testing.AllocsPerRun(100, func() {
		copy(field, pseudo[:]) // back to CHECKSUM_PARTIAL's content
		s, err := ChecksumBuff(b, 0, b.Len(), 0)
		if err != nil {
			panic(err)
		}
		sink += s
		if err := b.SetChecksumPartial(start, off); err != nil {
			panic(err)
		}
		if err := FinishChecksumBuff(b, c); err != nil {
			panic(err)
		}
		f, err := ParseFrameBuff(b)
		if err != nil {
			panic(err)
		}
		if err := f.VerifyChecksumBuff(b); err != nil {
			panic(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
	_ = sink
}

// BenchmarkChecksumBuff sums a head-split buffer (headers and 128 bytes
// linear, the rest in page frags) against the same bytes contiguous.
func BenchmarkChecksumBuff(b *testing.B) {
	c := newCache(b)
	for _, n := range benchSizes {
		l := layout{linear: min(n, 170)}
		for rest := n - l.linear; rest > 0; rest -= 4096 {
			l.frags = append(l.frags, min(rest, 4096))
		}
		data := make([]byte, n)
		buf := buildBuff(b, c, l, data)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				s, _ := ChecksumBuff(buf, 0, n, 0)
				benchSink += s
			}
		})
		c.Free(buf)
	}
}

// splitLayout spreads n bytes as head linear bytes and page frags of at most
// 1000 bytes (odd sizes included).
func splitLayout(n, head int) layout {
	l := layout{linear: min(n, head)}
	for rest := n - l.linear; rest > 0; {
		k := min(rest, 999)
		l.frags = append(l.frags, k)
		rest -= k
	}
	return l
}

func TestParseFrameBuff(t *testing.T) {
	c := newCache(t)
	frames := map[string][]byte{
		"udp4":      udpFrame(t, udp4Frame(), 3000),
		"udp6 vlan": udpFrame(t, &UDPFrame{VLANProto: EtherTypeVLAN, VLANTCI: 9, SourceIP: ip6a, DestinationIP: ip6b, SourcePort: 1, DestinationPort: 2}, 1800),
		"tcp4":      tcpFrame(false, 2500),
		"tcp6":      tcpFrame(true, 900),
		"icmp6":     icmpFrame(true),
		"arp":       arpFrame(),
	}
	for name, frame := range frames {
		want, err := ParseFrame(frame)
		if err != nil {
			t.Fatal(err)
		}
		headers := want.PayloadOffset
		if want.PayloadOffset == 0 {
			headers = want.End // ARP: the whole packet is the header
		}
		for _, head := range []int{headers, headers + 1, headers + 128, len(frame)} {
			t.Run(name+"/"+strconv.Itoa(head), func(t *testing.T) {
				b := buildBuff(t, c, splitLayout(len(frame), head), frame)
				defer c.Free(b)
				got, err := ParseFrameBuff(b)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("got  %+v\nwant %+v", got, want)
				}
				if b.MacOffset() != 0 || b.NetworkOffset() != want.NetworkOffset || b.Protocol() != want.EtherType {
					t.Fatalf("marks: mac %d network %d protocol %#x", b.MacOffset(), b.NetworkOffset(), b.Protocol())
				}
				if want.TransportOffset != 0 && b.TransportOffset() != want.TransportOffset {
					t.Fatalf("transport mark %d", b.TransportOffset())
				}
				if err := got.VerifyChecksumBuff(b); err != nil {
					t.Fatal(err)
				}
			})
		}
		// Headers that reach into the frags must be pulled first.
		if headers > EthernetHeaderLen {
			t.Run(name+"/not linear", func(t *testing.T) {
				b := buildBuff(t, c, splitLayout(len(frame), headers-1), frame)
				defer c.Free(b)
				_, err := ParseFrameBuff(b)
				wantParseErr(t, err, ErrTruncated, "frame")
				if b.MacHeaderWasSet() || b.NetworkHeaderWasSet() {
					t.Fatal("marks set on error")
				}
				if err := b.PskbMayPull(c, headers); err != nil {
					t.Fatal(err)
				}
				if got, err := ParseFrameBuff(b); err != nil || got != want {
					t.Fatalf("after PskbMayPull: %+v %v", got, err)
				}
			})
		}
	}
}

func TestParsePacketBuff(t *testing.T) {
	c := newCache(t)
	pkt := tcpFrame(true, 1234)[EthernetHeaderLen:]
	want, err := ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	b := buildBuff(t, c, splitLayout(len(pkt), want.PayloadOffset), pkt)
	defer c.Free(b)
	got, err := ParsePacketBuff(b)
	if err != nil || got != want {
		t.Fatalf("got %+v %v, want %+v", got, err, want)
	}
	if b.MacOffset() != 0 || b.MacLen() != 0 || b.NetworkOffset() != 0 || b.TransportOffset() != want.TransportOffset || b.Protocol() != EtherTypeIPv6 {
		t.Fatal("marks")
	}
	if err := got.VerifyChecksumBuff(b); err != nil {
		t.Fatal(err)
	}
	e, err := c.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(e)
	_, err = ParsePacketBuff(e)
	wantParseErr(t, err, ErrTruncated, "ip")
}

func TestVerifyChecksumBuff(t *testing.T) {
	c := newCache(t)
	for name, frame := range map[string][]byte{
		"udp4": udpFrame(t, udp4Frame(), 2000),
		"udp6": udpFrame(t, udp6Frame(), 2001),
		"tcp4": tcpFrame(false, 1999),
	} {
		t.Run(name, func(t *testing.T) {
			fr, _ := ParseFrame(frame)
			frame[len(frame)-500] ^= 0x10 // in a frag
			b := buildBuff(t, c, splitLayout(len(frame), fr.PayloadOffset), frame)
			defer c.Free(b)
			got, err := ParseFrameBuff(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := got.VerifyChecksumBuff(b); !errors.Is(err, ErrBadChecksum) {
				t.Fatalf("corrupt frag: %v", err)
			}
			if err := got.VerifyChecksum(frame); !errors.Is(err, ErrBadChecksum) {
				t.Fatalf("contiguous: %v", err)
			}
			bad := got
			bad.End = b.Len() + 1
			if err := bad.VerifyChecksumBuff(b); !errors.Is(err, skb.ErrRange) {
				t.Fatalf("frame past the buffer: %v", err)
			}
		})
	}
}
