package traffic

import (
	"context"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// sizeCounter is a datagram device that segments (a Segmenter with GSO
// on) and, instead of sending, counts the datagrams of every buffer by
// size, checks their stamps and frees the buffer. Its Xmit allocates
// nothing.
type sizeCounter struct {
	*memring.Device
	t      testing.TB
	gso    bool
	n      []uint64 // datagrams by size
	total  uint64
	supers uint64 // buffers of more than one datagram
	seq    uint64 // next sequence number expected
	noSeq  bool   // do not check the sequence numbers (clones repeat them)
	bad    int
}

func newSizeCounter(t testing.TB, gso bool) *sizeCounter {
	a, _ := pair(t, memring.Config{})
	return &sizeCounter{Device: a, t: t, gso: gso, n: make([]uint64, MaxDatagram6+1)}
}

func (d *sizeCounter) GSO() bool { return d.gso }

func (d *sizeCounter) Xmit(b *skb.Buff, more bool) error {
	defer d.Cache().Free(b)
	size, segs := b.Len(), 1
	if gs := b.GSOSize(); gs > 0 {
		size, segs = gs, b.GSOSegs()
		if !d.gso || b.GSOType() != skb.GSOUDPL4 || segs < 2 || segs > gsoMaxSegs ||
			size*segs != b.Len() || b.Len() > MaxDatagram {
			d.fail("super-packet of %d bytes: GSO size %d, %d segments, type %v", b.Len(), gs, segs, b.GSOType())
			return nil
		}
	}
	data := b.Data()
	for k := range segs {
		st, ok := ParseStamp(data[k*size:])
		if !ok || (!d.noSeq && st.Seq != d.seq) {
			d.fail("datagram %d of a buffer: stamp %+v, %v; want sequence number %d", k, st, ok, d.seq)
		}
		d.seq++
	}
	d.n[size] += uint64(segs)
	d.total += uint64(segs)
	if segs > 1 {
		d.supers++
	}
	return nil
}

func (d *sizeCounter) fail(format string, args ...any) {
	if d.bad++; d.bad <= 5 {
		d.t.Errorf(format, args...)
	}
}

func (d *sizeCounter) Flush() error { return nil }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// TestPktgenGSOIMIX checks that with GSO the datagrams follow an IMIX's
// weights as they do without: each size lags the per-datagram schedule
// by less than the datagrams held back, and after the period in which
// every size fills whole super-packets the counts are the weights
// exactly, in super-packets of the most datagrams the size allows.
func TestPktgenGSOIMIX(t *testing.T) {
	tests := []struct {
		name  string
		mix   []IMIXEntry
		burst int
		// caps is the most datagrams of each size per super-packet.
		caps []int
	}{
		{"imix burst 64", DefaultIMIX, 64, []int{64, 64, 44}},
		{"imix burst 7", DefaultIMIX, 7, []int{7, 7, 7}},
		{"64:1,1472:1", []IMIXEntry{{64, 1}, {1472, 1}}, 64, []int{64, 44}},
		{"32:1,65507:1", []IMIXEntry{{StampLen, 1}, {MaxDatagram, 1}}, 64, []int{64, 1}},
		{"one size", []IMIXEntry{{200, 1}}, 32, []int{32}},
		{"3 weights", []IMIXEntry{{100, 3}, {9000, 2}, {30000, 5}}, 64, []int{64, 7, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			total, slack := 0, 0
			for _, c := range tc.caps {
				slack += c
			}
			for _, e := range tc.mix {
				total += e.Weight
			}
			// Periods of the schedule after which every size has filled
			// whole super-packets: size i needs its weight times k to be
			// a multiple of its cap.
			k := 1
			for i, e := range tc.mix {
				m := tc.caps[i] / gcd(tc.caps[i], e.Weight)
				k = k / gcd(k, m) * m
			}
			period := uint64(k * total)
			sched := schedule(tc.mix)
			for _, gso := range []bool{false, true} {
				d := newSizeCounter(t, gso)
				g, err := NewPktgen(d, PktgenConfig{IMIX: tc.mix, Burst: tc.burst, GSO: gso})
				if err != nil {
					t.Fatal(err)
				}
				// want counts the sizes of the per-datagram schedule over
				// as many datagrams as were sent.
				want := map[int]uint64{}
				var wantN uint64
				exact := false
				for d.total < 3*period && d.bad == 0 {
					if _, err := g.Burst(); err != nil {
						t.Fatal(err)
					}
					for ; wantN < d.total; wantN++ {
						want[sched[wantN%uint64(len(sched))]]++
					}
					for _, e := range tc.mix {
						if diff := int64(d.n[e.Size]) - int64(want[e.Size]); diff <= -int64(slack) || diff >= int64(slack) {
							t.Fatalf("GSO %v, %d datagrams: %d of %d bytes, the schedule has %d",
								gso, d.total, d.n[e.Size], e.Size, want[e.Size])
						}
					}
					if d.total%period == 0 {
						for _, e := range tc.mix {
							if w := uint64(e.Weight) * d.total / uint64(total); d.n[e.Size] != w {
								t.Fatalf("GSO %v, %d datagrams (%d periods of the mix): %d of %d bytes, want %d",
									gso, d.total, d.total/uint64(total), d.n[e.Size], e.Size, w)
							}
						}
						exact = true
					}
				}
				g.Close()
				if !exact {
					t.Errorf("GSO %v: %d datagrams sent without passing through a multiple of %d", gso, d.total, period)
				}
				if !gso {
					continue
				}
				// Whole super-packets: as few buffers as the caps allow.
				var bufs uint64
				for i, e := range tc.mix {
					if tc.caps[i] > 1 {
						bufs += d.n[e.Size] / uint64(tc.caps[i])
					}
				}
				if d.supers != bufs {
					t.Errorf("%d super-packets, want %d", d.supers, bufs)
				}
			}
		})
	}
}

// TestPktgenGSOIMIXCount checks that a count ends a GSO IMIX run on the
// datagram, and that the bytes sent are the mix's: the mean size within
// a super-packet per size of the weights' mean.
func TestPktgenGSOIMIXCount(t *testing.T) {
	mix := []IMIXEntry{{64, 1}, {1472, 1}}
	d := newSizeCounter(t, true)
	g, err := NewPktgen(d, PktgenConfig{IMIX: mix, Burst: 64, GSO: true, Count: 10007})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for range 20000 {
		if _, err := g.Burst(); err != nil {
			t.Fatal(err)
		}
	}
	if d.total != 10007 || g.Queued() != 10007 {
		t.Fatalf("sent %d datagrams (queued %d), want 10007", d.total, g.Queued())
	}
	if n64, n1472 := d.n[64], d.n[1472]; n64 > n1472+128 || n1472 > n64+128 {
		t.Errorf("%d of 64 bytes, %d of 1472 bytes: want about as many", n64, n1472)
	}
}

// TestPktgenGSOIMIXAllocs checks that building GSO super-packets from a
// mix allocates nothing.
func TestPktgenGSOIMIXAllocs(t *testing.T) {
	d := newSizeCounter(t, true)
	g, err := NewPktgen(d, PktgenConfig{IMIX: DefaultIMIX, Burst: 64, GSO: true, Clone: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	d.noSeq = true
	for range 100 {
		g.Burst()
	}
	if n := testing.AllocsPerRun(1000, func() { g.Burst() }); n != 0 {
		t.Errorf("Burst allocates %v times", n)
	}
}

// gsoLoop is a memring pair that carries GSO fields: the sending side
// notes each buffer's GSO size and segments, in order, and the receiving
// side sets them again on what it hands over, as a datagram device that
// keeps a super-packet whole (loopback into a UDP_GRO socket) does.
type gsoLoop struct {
	meta [][2]int
}

// loopTx is the sending side of a gsoLoop: a Segmenter with GSO on.
type loopTx struct {
	*memring.Device
	l *gsoLoop
}

func (loopTx) GSO() bool { return true }

func (t loopTx) Xmit(b *skb.Buff, more bool) error {
	t.l.meta = append(t.l.meta, [2]int{b.GSOSize(), b.GSOSegs()})
	return t.Device.Xmit(b, more)
}

// loopRx is the receiving side of a gsoLoop.
type loopRx struct {
	*memring.Device
	l *gsoLoop
}

func (r loopRx) Poll(budget int, h netdev.Handler) (int, error) {
	return r.Device.Poll(budget, func(b *skb.Buff) {
		m := r.l.meta[0]
		r.l.meta = r.l.meta[1:]
		if m[0] > 0 {
			b.SetGSO(m[0], m[1], skb.GSOUDPL4)
		}
		h(b)
	})
}

// TestPktgenGSOCloneDuplicates sends GSO super-packets as clones through
// a pair that keeps them whole and expects a sink to count every copy of
// every datagram but the first as a duplicate, none as reordered or lost.
func TestPktgenGSOCloneDuplicates(t *testing.T) {
	tests := []struct {
		name  string
		cfg   PktgenConfig
		dups  uint64
		flows int
	}{
		{"clone 3", PktgenConfig{Count: 3072, Burst: 64, Clone: 3}, 2048, 1},
		{"clone 2, 4 flows", PktgenConfig{Count: 2048, Burst: 16, Clone: 2, Flows: 4}, 1024, 4},
		{"clone 4 imix", PktgenConfig{Count: 4096, Burst: 32, Clone: 4, IMIX: DefaultIMIX}, 3072, 1},
		// The count leaves 120 after 15 super-packets of 64 sent 3
		// times: the last is 40 datagrams, sent 3 times too.
		{"clone 3 uneven", PktgenConfig{Count: 3000, Burst: 64, Clone: 3}, 2000, 1},
		// A count that is no multiple of the clones: 2 datagrams sent 4
		// times, then 1 sent twice (the count cuts its copies, as a
		// plain run's last).
		{"clone 4, count 10", PktgenConfig{Count: 10, Burst: 64, Clone: 4}, 7, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, memring.Config{RingSize: 1024, RxBufSize: MaxDatagram})
			l := &gsoLoop{}
			tc.cfg.GSO = true
			g, err := NewPktgen(loopTx{a, l}, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s, err := NewSink(loopRx{b, l}, SinkConfig{})
			if err != nil {
				t.Fatal(err)
			}
			for g.Queued() < tc.cfg.Count {
				if _, err := g.Burst(); err != nil {
					t.Fatal(err)
				}
				pollAll(t, s)
			}
			var unique uint64
			for _, n := range g.seqs {
				unique += n
			}
			if unique+tc.dups != tc.cfg.Count {
				t.Errorf("the generator numbered %d datagrams of %d: want %d duplicates", unique, tc.cfg.Count, tc.cfg.Count-unique)
			}
			r := s.Result()
			if r.Packets != tc.cfg.Count || r.Duplicates != tc.dups || r.Reordered != 0 || r.Lost != 0 ||
				r.Flows != tc.flows || r.Unstamped != 0 {
				t.Errorf("sink %+v: want %d packets, %d duplicates, %d flows, nothing lost or reordered",
					r, tc.cfg.Count, tc.dups, tc.flows)
			}
		})
	}
}

// TestPktgenGSOCloneRun checks that Run, which cuts each burst to what
// the count and the rate allow, still sends whole super-packets as
// clones: Burst datagrams each, not Burst/Clone.
func TestPktgenGSOCloneRun(t *testing.T) {
	for _, clone := range []int{2, 3, 64} {
		d := newSizeCounter(t, true)
		d.noSeq = true
		const count = 64 * 192 // 64 times a multiple of every clone count tried
		g, err := NewPktgen(d, PktgenConfig{Count: count, Burst: 64, Clone: clone, GSO: true, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		g.Close()
		if d.total != count || d.supers != count/64 {
			t.Errorf("clone %d: %d datagrams in %d super-packets, want %d in %d", clone, d.total, d.supers, count, count/64)
		}
	}
}
