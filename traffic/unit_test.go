package traffic

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skbdev/skb/header"
)

func TestStampRoundTrip(t *testing.T) {
	s := Stamp{Run: 0xdeadbeef, Flow: 63, Seq: 1<<40 + 7, Tstamp: time.Now().UnixNano()}
	b := make([]byte, 64)
	PutStamp(b, s)
	got, ok := ParseStamp(b)
	if !ok || got != s {
		t.Fatalf("ParseStamp = %+v, %v; want %+v", got, ok, s)
	}
	if _, ok := ParseStamp(b[:StampLen-1]); ok {
		t.Error("ParseStamp accepted a short payload")
	}
	b[0] ^= 1
	if _, ok := ParseStamp(b); ok {
		t.Error("ParseStamp accepted a bad magic")
	}
}

// TestCounter feeds crafted sequences and checks loss, reordering and
// duplicates.
func TestCounter(t *testing.T) {
	type pkt struct {
		run, flow uint32
		seq       uint64
	}
	seq := func(flow uint32, s ...uint64) []pkt {
		var out []pkt
		for _, v := range s {
			out = append(out, pkt{1, flow, v})
		}
		return out
	}
	// rangeSeq returns the sequence numbers from a to b-1; repeatSeq, v n
	// times.
	rangeSeq := func(a, b uint64) []uint64 {
		var out []uint64
		for v := a; v < b; v++ {
			out = append(out, v)
		}
		return out
	}
	repeatSeq := func(v uint64, n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	// lateGroups returns flow 0's packets 0 to 199999 with 100000 to 101999
	// held back until after 172000, then coming two by two among the others.
	lateGroups := func() []pkt {
		var out []pkt
		var late []uint64
		for v := uint64(0); v < 200000; v++ {
			if v >= 100000 && v < 102000 {
				late = append(late, v)
				continue
			}
			out = append(out, pkt{1, 0, v})
			if v > 172000 && len(late) > 0 && v%4 == 0 {
				k := min(2, len(late))
				for _, l := range late[:k] {
					out = append(out, pkt{1, 0, l})
				}
				late = late[k:]
			}
		}
		for _, l := range late {
			out = append(out, pkt{1, 0, l})
		}
		return out
	}
	// seqUpTo returns flow 0's packets 0 to n-1, in order.
	seqUpTo := func(n uint64) []pkt {
		out := make([]pkt, n)
		for i := range out {
			out[i] = pkt{1, 0, uint64(i)}
		}
		return out
	}
	tests := []struct {
		name string
		in   []pkt
		want FlowTotals
	}{
		{"in order", seq(0, 0, 1, 2, 3, 4), FlowTotals{Packets: 5, Flows: 1}},
		{"one lost", seq(0, 0, 1, 3, 4), FlowTotals{Packets: 4, Lost: 1, Flows: 1}},
		{"burst lost", seq(0, 0, 10), FlowTotals{Packets: 2, Lost: 9, Flows: 1}},
		{"swap", seq(0, 0, 2, 1, 3), FlowTotals{Packets: 4, Reordered: 1, Flows: 1}},
		{"late by many", seq(0, 0, 1, 3, 4, 5, 2), FlowTotals{Packets: 6, Reordered: 1, Flows: 1}},
		{"reordered and lost", seq(0, 0, 3, 1, 4), FlowTotals{Packets: 4, Lost: 1, Reordered: 1, Flows: 1}},
		{"duplicates", seq(0, 0, 0, 0, 1, 1, 2), FlowTotals{Packets: 6, Duplicates: 3, Flows: 1}},
		{"starts late", seq(0, 100, 101, 103), FlowTotals{Packets: 3, Lost: 1, Flows: 1}},
		{"late before first", seq(0, 5, 6, 4), FlowTotals{Packets: 3, Reordered: 1, Flows: 1}},
		{"flows interleaved", append(seq(0, 0, 1, 2), seq(7, 0, 2)...), FlowTotals{Packets: 5, Lost: 1, Flows: 2}},
		{"new run restarts the flow", []pkt{{1, 0, 0}, {1, 0, 2}, {2, 0, 0}, {2, 0, 1}},
			FlowTotals{Packets: 4, Lost: 1, Flows: 2}},
		{"untracked flow", []pkt{{1, MaxFlows, 0}, {1, 0, 0}}, FlowTotals{Packets: 2, Flows: 1, Untracked: 1}},
		// A stamp far from its flow, either way, is not a loss.
		{"forged far ahead", seq(0, 0, 1, 1<<63, 2), FlowTotals{Packets: 4, Flows: 1, Untracked: 1}},
		{"jump at the bound", seq(0, 0, 1+MaxSeqAhead-1), FlowTotals{Packets: 2, Lost: MaxSeqAhead - 1, Flows: 1}},
		{"jump past the bound", seq(0, 0, 1+MaxSeqAhead), FlowTotals{Packets: 2, Flows: 1, Untracked: 1}},
		// Behind the flow, however far, a stamp is late.
		{"far behind", seq(0, 1<<40, 1<<40+1, 3), FlowTotals{Packets: 3, Reordered: 1, Flows: 1}},
		// A GSO super-packet of 4 sent whole 3 times (clones), twice.
		{"gso clones", seq(0, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7),
			FlowTotals{Packets: 24, Duplicates: 16, Flows: 1}},
		{"reordered then repeated", seq(0, 0, 5, 3, 3, 5), FlowTotals{Packets: 5, Lost: 3, Reordered: 1, Duplicates: 2, Flows: 1}},
		{"repeat of the first", seq(0, 7, 8, 9, 7), FlowTotals{Packets: 4, Duplicates: 1, Flows: 1}},
		{"late before first, then again", seq(0, 5, 6, 4, 4), FlowTotals{Packets: 4, Reordered: 1, Duplicates: 1, Flows: 1}},
		// The window keeps the blocks of 64 from 15 before the highest's:
		// 0 is remembered with 1023 the highest, not with 1024.
		{"repeat at the window's edge", append(seqUpTo(1024), seq(0, 0)...), FlowTotals{Packets: 1025, Duplicates: 1, Flows: 1}},
		{"repeat past the window", append(seqUpTo(1025), seq(0, 0)...), FlowTotals{Packets: 1026, Reordered: 1, Flows: 1}},
		// Seq 1024 takes the slot 0 had: the step to 1029 must have
		// cleared it.
		{"slot reused", append(seqUpTo(1024), seq(0, 1029, 1024)...),
			FlowTotals{Packets: 1026, Lost: 4, Reordered: 1, Flows: 1}},
		{"slot reused after a jump", append(seqUpTo(64), seq(0, 1029, 1024)...),
			FlowTotals{Packets: 66, Lost: 964, Reordered: 1, Flows: 1}},
		// 10 is past the window after the jump: late or repeated, it
		// counts as reordered.
		{"far jump then late", seq(0, 0, 5000, 4990, 4990, 10),
			FlowTotals{Packets: 5, Lost: 4997, Reordered: 2, Duplicates: 1, Flows: 1}},
		// Repeats older than the window cannot be told from late
		// packets: 400 lost (500 to 899), then 0 again 400 times, which
		// hide them.
		{"old repeats hide a loss", append(append(seqUpTo(500), seq(0, rangeSeq(900, 2100)...)...), seq(0, repeatSeq(0, 400)...)...),
			FlowTotals{Packets: 2100, Reordered: 400, Flows: 1}},
		// A far stamp followed by the flow's next: the flow moved there.
		{"far jump followed", seq(0, 0, 1+MaxSeqAhead, 2+MaxSeqAhead), FlowTotals{Packets: 3, Lost: MaxSeqAhead, Flows: 1}},
		{"far jump followed, reordered", seq(0, 0, 5+MaxSeqAhead, 3+MaxSeqAhead, 4+MaxSeqAhead),
			FlowTotals{Packets: 4, Lost: MaxSeqAhead + 2, Reordered: 2, Flows: 1}},
		// A far stamp sent again (clones) confirms itself.
		{"far stamp cloned", seq(0, 0, 1+MaxSeqAhead, 1+MaxSeqAhead, 1), FlowTotals{Packets: 4, Lost: MaxSeqAhead - 1, Reordered: 1, Duplicates: 1, Flows: 1}},
		{"clones across a burst", seq(0, 0, 0, 1, 1, 2000, 2000, 2001, 2001), FlowTotals{Packets: 8, Lost: 1998, Duplicates: 4, Flows: 1}},
		// The first packet after a burst of loss reordered ahead of the
		// ones after it: 100 to 1007 lost.
		{"burst, reordered at its edge", append(append(append(seqUpTo(100), seq(0, 1070)...), seq(0, rangeSeq(1008, 1070)...)...), seq(0, rangeSeq(1071, 1100)...)...),
			FlowTotals{Packets: 192, Lost: 908, Reordered: 62, Flows: 1}},
		// A flow losing 1499 of every 1500: each stamp held until the
		// next follows it; the last may stay untracked.
		{"sparse", seq(0, 0, 1500, 3000, 4500, 6000), FlowTotals{Packets: 5, Lost: 5996, Flows: 1}},
		{"sparse, the last held", seq(0, 0, 1500, 3000, 4500), FlowTotals{Packets: 4, Lost: 2998, Flows: 1, Untracked: 1}},
		// One flipped high bit amid a flow: one untracked packet.
		{"bit flip", append(seqUpTo(100), seq(0, 100|1<<31, 101, 102)...), FlowTotals{Packets: 103, Lost: 1, Flows: 1, Untracked: 1}},
		// A flipped bit 10 to 15 (1024 to 32768 ahead): the genuine
		// packets after it do not follow it, and are not lost.
		{"bit 10 flip", append(append(seqUpTo(1000), seq(0, 1000|1<<10)...), seq(0, rangeSeq(1001, 3000)...)...),
			FlowTotals{Packets: 3000, Lost: 1, Flows: 1, Untracked: 1}},
		{"bit 15 flip", append(append(seqUpTo(1000), seq(0, 1000|1<<15)...), seq(0, rangeSeq(1001, 3000)...)...),
			FlowTotals{Packets: 3000, Lost: 1, Flows: 1, Untracked: 1}},
		// A burst of 100000 lost, then a late packet from before it
		// between the first two after it.
		// Packets held back 70000 places and more by the path, coming
		// late in pairs: late, not a flow moving back and forth.
		{"late groups far behind", lateGroups(), FlowTotals{Packets: 200000, Reordered: 2000, Flows: 1}},
		{"burst then late", append(append(seqUpTo(1000), seq(0, 101000, 999)...), seq(0, rangeSeq(101001, 101100)...)...),
			FlowTotals{Packets: 1101, Lost: 100000, Duplicates: 1, Flows: 1}},
		{"forged near 2^32", append(seqUpTo(100), seq(0, 1<<32-1, 100, 101)...), FlowTotals{Packets: 103, Flows: 1, Untracked: 1}},
		// A forged first stamp, then the genuine flow far behind it: the
		// flow starts again at the genuine stamps, and the forged one is
		// untracked (before, every genuine packet counted as late).
		{"forged first", append(seq(0, 1<<40), seqUpTo(100)...), FlowTotals{Packets: 101, Flows: 1, Untracked: 1}},
		{"forged first, 2^63", append(seq(0, 1<<63), seqUpTo(100)...), FlowTotals{Packets: 101, Flows: 1, Untracked: 1}},
		// A first stamp less than MaxSeqAhead ahead of the next is the
		// flow's: those behind it are late, and the gap below it lost.
		{"late first, near", append(seq(0, 900), seqUpTo(100)...), FlowTotals{Packets: 101, Lost: 800, Reordered: 100, Flows: 1}},
		// A flow past its first stamp does not start again.
		{"far behind, after two", append(seq(0, 1<<40, 1<<40+1), seqUpTo(100)...), FlowTotals{Packets: 102, Reordered: 100, Flows: 1}},
		{"far behind, then more", seq(0, 1<<40, 1<<40+1, 7, 8, 10), FlowTotals{Packets: 5, Reordered: 3, Flows: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Counter
			for _, p := range tc.in {
				c.Add(Stamp{Run: p.run, Flow: p.flow, Seq: p.seq})
			}
			if got := c.Totals(); got != tc.want {
				t.Errorf("Totals = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCounterShuffled checks that a random permutation of a flow with some
// packets removed counts exactly the removed ones as lost.
func TestCounterShuffled(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 10000
	var seqs []uint64
	dropped := 0
	for i := range uint64(n) {
		if i > 0 && i < n-1 && r.IntN(50) == 0 {
			dropped++
			continue
		}
		seqs = append(seqs, i)
	}
	// Swap neighbours now and then: local reordering, as on a real link.
	for i := 0; i+1 < len(seqs); i++ {
		if r.IntN(20) == 0 && seqs[i] != 0 && seqs[i+1] != n-1 {
			seqs[i], seqs[i+1] = seqs[i+1], seqs[i]
			i++
		}
	}
	var c Counter
	for _, s := range seqs {
		c.Add(Stamp{Run: 9, Seq: s})
	}
	got := c.Totals()
	if got.Lost != uint64(dropped) || got.Packets != uint64(len(seqs)) || got.Reordered == 0 {
		t.Errorf("Totals = %+v, want lost %d of %d packets, some reordered", got, dropped, len(seqs))
	}
}

// TestCounterWindow checks the Counter against an exact reference (a set
// of every sequence number seen) on flows with loss, local reordering and
// repeats, all within the window: a repeat is a duplicate however late it
// comes, a late first arrival is reordered, a gap is lost.
func TestCounterWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const flows, n = 3, 20000
	var c Counter
	var want FlowTotals
	for f := range uint32(flows) {
		// Each packet arrives at its sequence number's place, some of
		// them up to 300 places late; some come again up to 400 places
		// after their place (as from a link that retransmits, or
		// clones). A packet never arrives more than 400 sequence numbers
		// behind the highest before it, well inside the window.
		type arrival struct{ at, seq uint64 }
		var in []arrival
		for i := range uint64(n) {
			if r.IntN(30) == 0 {
				continue // lost
			}
			at := i
			if r.IntN(25) == 0 {
				at += uint64(r.IntN(300))
			}
			in = append(in, arrival{at, i})
			if r.IntN(20) == 0 {
				in = append(in, arrival{i + 1 + uint64(r.IntN(400)), i})
			}
		}
		slices.SortStableFunc(in, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
		stream := make([]uint64, len(in))
		for k, a := range in {
			stream[k] = a.seq
		}
		seen := map[uint64]bool{}
		var lo, hi uint64
		for k, s := range stream {
			c.Add(Stamp{Run: 1, Flow: f, Seq: s})
			want.Packets++
			switch {
			case seen[s]:
				want.Duplicates++
			case k > 0 && s < hi:
				want.Reordered++
			}
			if k == 0 || s < lo {
				lo = s
			}
			hi = max(hi, s)
			seen[s] = true
		}
		want.Lost += hi - lo + 1 - uint64(len(seen))
		want.Flows++
	}
	if got := c.Totals(); got != want {
		t.Errorf("Totals = %+v, want %+v", got, want)
	}
	if want.Duplicates == 0 || want.Reordered == 0 || want.Lost == 0 {
		t.Errorf("the test made no duplicates, reordering or loss: %+v", want)
	}
}

// TestCounterAllocs checks that counting allocates nothing once the flows
// are known.
func TestCounterAllocs(t *testing.T) {
	var c Counter
	c.Add(Stamp{Run: 1, Flow: 9})
	var seq uint64
	n := testing.AllocsPerRun(1000, func() {
		seq += 37
		c.Add(Stamp{Run: 1, Flow: uint32(seq % 10), Seq: seq})
		c.Add(Stamp{Run: 1, Flow: uint32(seq % 10), Seq: seq - 20})
	})
	if n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
}

func TestHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	var exact []time.Duration
	for range 100000 {
		d := time.Duration(r.ExpFloat64() * 50e3) // around 50 µs
		h.Record(d)
		exact = append(exact, d)
	}
	slices.Sort(exact)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := exact[int(q*float64(len(exact)))-1]
		got := h.Quantile(q)
		if diff := float64(got-want) / float64(want); diff > 0.02 || diff < -0.02 {
			t.Errorf("Quantile(%v) = %v, want %v within 2%%", q, got, want)
		}
	}
	s := h.Summary()
	if s.Min != exact[0] || s.Max != exact[len(exact)-1] || s.Count != uint64(len(exact)) {
		t.Errorf("Summary = %+v", s)
	}
	for _, v := range []uint64{0, 1, 127, 128, 129, 1 << 20, 1<<63 - 1} {
		i := histIndex(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d out of range", v, i)
		}
		if m := histValue(i); v >= 128 && (float64(m) < float64(v)*0.98 || float64(m) > float64(v)*1.02) {
			t.Errorf("histValue(histIndex(%d)) = %d, more than 2%% off", v, m)
		}
	}
}

func TestParseIMIX(t *testing.T) {
	tests := []struct {
		in   string
		want []IMIXEntry
		err  bool
	}{
		{"imix", DefaultIMIX, false},
		{"64:7,576:4,1472:1", DefaultIMIX, false},
		{"100", []IMIXEntry{{100, 1}}, false},
		{" 64:3 , 128 ", []IMIXEntry{{64, 3}, {128, 1}}, false},
		{"64 : 3,128 :2", []IMIXEntry{{64, 3}, {128, 2}}, false},
		{"IMIX", DefaultIMIX, false},
		{" Default ", DefaultIMIX, false},
		{"64:", nil, true},     // weight missing
		{"64,,128", nil, true}, // empty entry
		{"6 4:1", nil, true},   // space inside a number
		{"", nil, true},
		{"10:1", nil, true},        // below the stamp
		{"64:0", nil, true},        // weight 0
		{"64:x", nil, true},        // not a number
		{"x:1", nil, true},         // not a number
		{"64:70000", nil, true},    // weight too large
		{"64:-1,128:1", nil, true}, // negative weight
	}
	for _, tc := range tests {
		got, err := ParseIMIX(tc.in)
		if tc.err {
			if !errors.Is(err, ErrConfig) {
				t.Errorf("ParseIMIX(%q) error = %v, want ErrConfig", tc.in, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseIMIX(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestSchedule(t *testing.T) {
	s := schedule(DefaultIMIX)
	if len(s) != 12 {
		t.Fatalf("schedule has %d entries, want 12", len(s))
	}
	n := map[int]int{}
	for _, v := range s {
		n[v]++
	}
	if n[64] != 7 || n[576] != 4 || n[1472] != 1 {
		t.Errorf("schedule %v: counts %v, want 7:4:1", s, n)
	}
	// Smooth: no size appears three times in a row.
	for i := 2; i < len(s); i++ {
		if s[i] == s[i-1] && s[i] == s[i-2] {
			t.Errorf("schedule %v is not spread out", s)
			break
		}
	}
}

// TestFrameTemplate checks that the per-packet checksum update gives the
// checksum a full computation gives, for IPv4 and IPv6, and that a
// reflected frame still verifies.
func TestFrameTemplate(t *testing.T) {
	frames := map[string]*header.UDPFrame{
		"ipv4": {Source: header.MAC{2, 0, 0, 0, 0, 1}, Destination: header.MAC{2, 0, 0, 0, 0, 2},
			SourceIP: netip.MustParseAddr("198.18.0.1"), DestinationIP: netip.MustParseAddr("198.18.0.2"),
			SourcePort: 4000, DestinationPort: 9000},
		"ipv6 vlan": {Source: header.MAC{2, 0, 0, 0, 0, 1}, Destination: header.MAC{2, 0, 0, 0, 0, 2},
			VLANProto: header.EtherTypeVLAN, VLANTCI: 5,
			SourceIP: netip.MustParseAddr("2001:2::1"), DestinationIP: netip.MustParseAddr("2001:2::2"),
			SourcePort: 4000, DestinationPort: 9000},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for name, f := range frames {
		t.Run(name, func(t *testing.T) {
			for _, size := range []int{StampLen, 64, 65, 1472} {
				tm, err := newTemplate(f, size)
				if err != nil {
					t.Fatal(err)
				}
				for range 200 {
					port := uint16(r.IntN(65535) + 1)
					st := Stamp{Run: r.Uint32(), Flow: r.Uint32(), Seq: r.Uint64(), Tstamp: r.Int64()}
					got := make([]byte, len(tm.frame))
					tm.fill(got, port, st)

					ff := *f
					ff.DestinationPort = port
					want := make([]byte, len(tm.frame))
					PutStamp(want[ff.HeaderLen():], st)
					if _, err := header.BuildUDP(want, &ff); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("size %d port %d: fill gives\n%x\nBuildUDP gives\n%x", size, port, got, want)
					}
					pf, err := header.ParseFrame(got)
					if err != nil {
						t.Fatal(err)
					}
					reflectUDP(got, &pf)
					if err := pf.VerifyChecksum(got); err != nil {
						t.Fatalf("reflected frame: %v", err)
					}
					// A frame holding only the pseudo-header sum (as a
					// veth with transmit checksumming delivers it) gets
					// a whole checksum.
					u0 := header.UDP(got[pf.TransportOffset:])
					u0.SetChecksum(0x1234)
					fillUDPChecksum(got, &pf)
					if err := pf.VerifyChecksum(got); err != nil {
						t.Fatalf("filled checksum: %v", err)
					}
					u := header.UDP(got[pf.TransportOffset:])
					if u.SourcePort() != port || u.DestinationPort() != f.SourcePort {
						t.Fatalf("reflected ports %d -> %d", u.SourcePort(), u.DestinationPort())
					}
				}
			}
		})
	}
}

func TestPacer(t *testing.T) {
	c := newClock()
	p := newPacer(1000) // 1 ms per packet
	var now time.Duration
	sent := 0
	for now < 100*time.Millisecond {
		if now, _ = p.wait(&c, now, 1, time.Second); now >= time.Second {
			t.Fatal("the pacer slept to its wake-up")
		}
		sent++
		now = c.now()
	}
	el := c.now()
	// The bucket never lets more out than the rate allows plus its depth.
	if limit := int(el.Seconds()*1000) + int(pacerDepth/time.Millisecond) + 1; sent > limit {
		t.Errorf("sent %d in %v at 1000/s, more than %d", sent, el, limit)
	}
	if sent < 50 {
		t.Errorf("sent %d in %v at 1000/s: the pacer slept far too long", sent, el)
	}
	// A wait never goes past its wake-up, and says it woke for it.
	p = newPacer(1)
	now = c.now()
	if _, ok := p.wait(&c, now, 1, now); !ok {
		t.Error("the first packet waited")
	}
	t0 := c.now()
	if _, ok := p.wait(&c, t0, 1, t0+20*time.Millisecond); ok {
		t.Error("a wait woken 20ms in for a packet due 1s later let it go")
	}
	if d := c.now() - t0; d > 500*time.Millisecond {
		t.Errorf("wait ran %v past a 20ms wake-up", d)
	}
	// A rate whose interval passes the largest Duration lets one packet
	// go, then none.
	for _, rate := range []float64{1e-10, 1e-300} {
		p = newPacer(rate)
		now = c.now()
		if _, ok := p.wait(&c, now, 1, now); !ok {
			t.Errorf("rate %g: the first packet waited", rate)
		}
		if _, ok := p.wait(&c, now, 64, now+time.Millisecond); ok {
			t.Errorf("rate %g: a second packet went at once", rate)
		}
	}
}

// TestPacerLateWakeBurst checks that a burst whose cost is more than
// pacerDepth keeps the time of a wake-up late by less than that cost: 64
// packets at 1000 pps cost 64 ms, and a run woken 30 ms late at each burst
// (a loaded machine) must still send at the rate, the next burst going at
// once. The clock is the pacer's virtual time: no sleep is taken.
func TestPacerLateWakeBurst(t *testing.T) {
	c := newClock()
	p := newPacer(1000)
	now := time.Hour // past every tat: nothing sleeps
	p.tat = now
	sent := 0
	for range 100 {
		// The burst was due at tat; the wake-up came 30 ms after it.
		now = p.tat + 30*time.Millisecond
		if _, ok := p.wait(&c, now, 64, now+time.Hour); !ok {
			t.Fatal("a late burst waited")
		}
		sent += 64
	}
	// 100 bursts from an hour in: tat moved by their whole cost, not
	// cut back to the depth at each late wake-up.
	if got, want := p.tat-time.Hour, 100*64*time.Millisecond; got != want {
		t.Errorf("100 bursts late by 30 ms charged %v of the bucket, want %v", got, want)
	}
	if d := p.depth(64); d != 64*time.Millisecond {
		t.Errorf("depth for 64 at 1000 pps %v, want 64ms", d)
	}
	if d := newPacer(1e-300); d.depth(64) != time.Second {
		t.Errorf("depth at 1e-300 pps %v, want a second", d.depth(64))
	}
	if d := newPacer(1e6); d.depth(64) != pacerDepth {
		t.Errorf("depth for 64 at 1 Mpps %v, want %v", d.depth(64), pacerDepth)
	}
}

// TestPacerWholeNanoseconds checks that the bucket charges a burst at
// least its exact cost when the cost is not a whole number of ns: cut
// each time, 1000 bursts of 2 at 123456 pps would be charged 104 ns
// less than they cost.
func TestPacerWholeNanoseconds(t *testing.T) {
	c := newClock()
	p := newPacer(123456)
	for range 1000 {
		p.wait(&c, p.tat, 2, time.Hour) // due now: no sleep
	}
	if exact := 2000 * 1e9 / 123456.0; float64(p.tat) < exact {
		t.Errorf("1000 bursts of 2 at 123456 pps charged %d ns, under their %.1f", p.tat, exact)
	}
}

// TestPacerDue checks how many packets the pacer lets a burst hold before
// a deadline: those whose slots start before it, and one when none does
// (a wait too short to sleep must not let a whole burst past the end).
func TestPacerDue(t *testing.T) {
	p := newPacer(1000) // 1 ms a packet
	for _, tc := range []struct {
		tat, deadline time.Duration
		want          int
	}{
		{0, 10 * time.Millisecond, 10},
		{0, 100 * time.Millisecond, 47},
		{5 * time.Millisecond, 10 * time.Millisecond, 5},
		{10 * time.Millisecond, 10 * time.Millisecond, 1},
		{11 * time.Millisecond, 10 * time.Millisecond, 1},
	} {
		p.tat = tc.tat
		if got := p.due(47, tc.deadline); got != tc.want {
			t.Errorf("due(47) with the bucket paid until %v and the end at %v: %d, want %d", tc.tat, tc.deadline, got, tc.want)
		}
	}
	if got := (&pacer{}).due(47, 0); got != 47 {
		t.Errorf("no rate: due(47) = %d, want 47", got)
	}
}

// TestCounterRuns checks how a flow counts packets of several runs: two
// runs sending on it at once each count on their own, with their losses;
// a run that follows a quiet one replaces it, its figures kept in the
// totals; and past maxSideRuns runs at once the packets of a further run
// count as untracked, the flows counted right, until a run beside stops.
func TestCounterRuns(t *testing.T) {
	var c Counter
	// Runs 1 and 2 interleaved on flow 0, each losing every tenth packet.
	for i := range uint64(1000) {
		for _, run := range []uint32{1, 2} {
			if i%10 != 9 || i == 999 {
				c.Add(Stamp{Run: run, Seq: i})
			}
		}
	}
	if got, want := c.Totals(), (FlowTotals{Packets: 2 * 901, Lost: 2 * 99, Flows: 2}); got != want {
		t.Fatalf("two runs at once: %+v, want %+v", got, want)
	}
	// Run 3 after both have been quiet for runQuiet packets of flow 1:
	// it replaces run 1 in flow 0's entry; run 2 stays beside it.
	for i := range uint64(runQuiet + 1) {
		c.Add(Stamp{Run: 1, Flow: 1, Seq: i})
	}
	for i := range uint64(100) {
		if i != 50 {
			c.Add(Stamp{Run: 3, Seq: i})
		}
	}
	want := FlowTotals{Packets: 2*901 + runQuiet + 1 + 99, Lost: 2*99 + 1, Flows: 4}
	if got := c.Totals(); got != want {
		t.Fatalf("a third run after a quiet spell: %+v, want %+v", got, want)
	}
	// Forged runs, one packet each, on flow 2 while its run sends: at
	// most maxSideRuns states beside it.
	for i := range uint32(10 * maxSideRuns) {
		c.Add(Stamp{Run: 1, Flow: 2, Seq: uint64(i)})
		c.Add(Stamp{Run: 1000 + i, Flow: 2})
	}
	if len(c.side) > maxSideRuns {
		t.Fatalf("%d runs beside the flow table, more than %d", len(c.side), maxSideRuns)
	}

	// 70 runs on one flow at once, 20 packets each, interleaved: 65 are
	// counted (the table's and 64 beside), with no loss; the packets of
	// the other 5 are untracked, and no run counts twice.
	c.Reset()
	clear(c.side)
	c.side = nil
	for i := range uint64(20) {
		for run := range uint32(70) {
			c.Add(Stamp{Run: 100 + run, Flow: 3, Seq: i})
		}
	}
	if got, want := c.Totals(), (FlowTotals{Packets: 70 * 20, Flows: 65, Untracked: 5 * 20}); got != want {
		t.Fatalf("70 runs at once: %+v, want %+v", got, want)
	}
	// Once the runs beside have been quiet, a new run is counted.
	for i := range uint64(runQuiet + 1) {
		c.Add(Stamp{Run: 100, Flow: 3, Seq: 20 + i})
	}
	for i := range uint64(10) {
		c.Add(Stamp{Run: 999, Flow: 3, Seq: i})
	}
	if got := c.Totals(); got.Flows != 66 || got.Untracked != 5*20 || got.Lost != 0 {
		t.Fatalf("a new run after the runs beside stopped: %+v, want 66 flows, %d untracked, no loss", got, 5*20)
	}
	c.Reset()
	if got := c.Totals(); got != (FlowTotals{}) {
		t.Fatalf("after Reset: %+v", got)
	}
}

// TestCounterAge checks that runs one after the other, each short, are
// all counted when the Counter ages between them (a sink calls Age every
// second): without Age the 66th and later are untracked, none of the
// runs before having been quiet for runQuiet packets.
func TestCounterAge(t *testing.T) {
	for _, age := range []bool{false, true} {
		var c Counter
		for run := range uint32(70) {
			for i := range uint64(200) {
				if i != 10 {
					c.Add(Stamp{Run: 100 + run, Seq: i})
				}
			}
			if age {
				c.Age()
				c.Age()
			}
		}
		got := c.Totals()
		if age && (got.Flows != 70 || got.Untracked != 0 || got.Lost != 70) {
			t.Errorf("70 runs of 200 packets, aged between: %+v, want 70 flows, 70 lost, none untracked", got)
		}
		if !age && (got.Flows != 65 || got.Untracked != 5*199) {
			t.Errorf("70 runs of 200 packets, not aged: %+v, want 65 flows, %d untracked", got, 5*199)
		}
	}
	// A run that sent in the last epoch is not taken for stopped.
	var c Counter
	c.Add(Stamp{Run: 1, Seq: 0})
	c.Age()
	c.Add(Stamp{Run: 2, Seq: 0})
	if got := c.Totals(); got.Flows != 2 || len(c.side) != 1 {
		t.Errorf("a second run one Age after the first: %+v, %d beside; want both counted apart", got, len(c.side))
	}
}

// TestCounterTableLimit checks a Counter whose table SetTableLimit
// bounded, as each port's of a sink on many ports: a flow above the limit
// is counted beside the table, with its losses, without the table growing
// past the limit; forged stamps of many high flows take at most
// maxSideRuns states beside it, the rest untracked; and a flow above the
// limit costs no allocation per packet.
func TestCounterTableLimit(t *testing.T) {
	var c Counter
	c.SetTableLimit(portFlows)
	for i := range uint64(100) {
		if i != 7 {
			c.Add(Stamp{Run: 1, Flow: 900, Seq: i})
		}
		c.Add(Stamp{Run: 1, Flow: 3, Seq: i})
	}
	if got, want := c.Totals(), (FlowTotals{Packets: 199, Lost: 1, Flows: 2}); got != want {
		t.Fatalf("flows 3 and 900: %+v, want %+v", got, want)
	}
	if allocs := testing.AllocsPerRun(100, func() { c.Add(Stamp{Run: 1, Flow: 900, Seq: 100}) }); allocs != 0 {
		t.Errorf("%v allocations a packet of a flow beside the table", allocs)
	}
	for f := range uint32(1000) {
		c.Add(Stamp{Run: 2, Flow: MaxFlows - 1 - f})
	}
	if len(c.flows) > portFlows || len(c.side) > maxSideRuns {
		t.Fatalf("after 1000 forged flows: a table of %d flows and %d beside, want at most %d and %d",
			len(c.flows), len(c.side), portFlows, maxSideRuns)
	}
	if got := c.Totals(); got.Flows != maxSideRuns+1 || got.Untracked != 1000-(maxSideRuns-1) {
		t.Fatalf("after 1000 forged flows: %+v, want %d flows and %d untracked", got, maxSideRuns+1, 1000-(maxSideRuns-1))
	}
}

// TestCounterHotFolded checks that the state of a flow above the table's
// limit, remembered for its next packet (hot), is forgotten when a second
// run on a flow of the table folds it to make room: its next packet counts
// as untracked (no room is left), never into a state the totals no longer
// see.
func TestCounterHotFolded(t *testing.T) {
	var c Counter
	c.SetTableLimit(portFlows)
	const k = maxSideRuns - 1
	for f := range uint32(k) {
		c.Add(Stamp{Run: 1, Flow: f})
	}
	c.Add(Stamp{Run: 1, Flow: 900}) // beside the table, remembered
	for i := range uint64(runQuiet + 1) {
		c.Add(Stamp{Run: 1, Flow: uint32(i % k), Seq: 1 + i/k}) // flow 900 goes quiet
	}
	for f := range uint32(k) {
		c.Add(Stamp{Run: 2, Flow: f}) // second runs, beside: the room is full
	}
	c.Add(Stamp{Run: 3, Flow: 0}) // folds flow 900's run, the one quiet
	c.Add(Stamp{Run: 1, Flow: 900, Seq: 1})
	if got := c.Totals(); got.Untracked != 1 || got.Flows != k+k+1+1 {
		t.Errorf("a packet of flow 900 after its state was folded: %+v, want it untracked, %d flows", got, k+k+1+1)
	}
}

// TestCounterAgeMakesRoom checks that Age lets the next run in at once
// when the room beside the table is full of runs that went quiet by the
// clock, even after a scan found none quiet by their packets.
func TestCounterAgeMakesRoom(t *testing.T) {
	var c Counter
	for run := range uint32(maxSideRuns + 1) {
		c.Add(Stamp{Run: 100 + run})
	}
	c.Add(Stamp{Run: 999}) // no room, none quiet: untracked
	c.Age()
	c.Age()
	c.Add(Stamp{Run: 100, Seq: 1}) // the table's run goes on
	c.Add(Stamp{Run: 1000})
	if got := c.Totals(); got.Untracked != 1 || got.Flows != maxSideRuns+2 {
		t.Errorf("a run after two Ages: %+v, want 1 untracked (the run before them), %d flows", got, maxSideRuns+2)
	}
}

// BenchmarkCounterManyRuns counts packets of 70 runs on one flow at once,
// interleaved: 65 are counted, the other 5 untracked. An untracked packet
// must not scan the runs beside the flow each time (about 750 ns a packet
// when it did, against a few ns for a tracked one).
func BenchmarkCounterManyRuns(b *testing.B) {
	var c Counter
	seq := uint64(0)
	for i := 0; i < b.N; i++ {
		run := uint32(i % 70)
		if run == 0 {
			seq++
		}
		c.Add(Stamp{Run: 100 + run, Seq: seq})
	}
	if t := c.Totals(); b.N >= 70*20 && t.Flows != 65 {
		b.Fatalf("%+v: want 65 flows", t)
	}
}

// FuzzParseIMIX checks that ParseIMIX never panics, that what it accepts
// is a valid mix (sizes from StampLen, weights from 1, the weights within
// maxScheduleLen), and that the mix written back as SIZE:WEIGHT pairs
// parses to the same.
func FuzzParseIMIX(f *testing.F) {
	for _, s := range []string{"imix", "64:7,576:4,1472:1", " 64 : 3 , 128 ", "100", "", "64:", "x:1", "64:70000", "Default"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mix, err := ParseIMIX(s)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("ParseIMIX(%q): %v, not ErrConfig", s, err)
			}
			return
		}
		var parts []string
		total := 0
		for _, e := range mix {
			if e.Size < StampLen || e.Weight < 1 {
				t.Fatalf("ParseIMIX(%q) = %v: entry %v", s, mix, e)
			}
			total += e.Weight
			parts = append(parts, fmt.Sprintf("%d:%d", e.Size, e.Weight))
		}
		if total > maxScheduleLen || len(mix) == 0 {
			t.Fatalf("ParseIMIX(%q) = %v: %d entries, weights %d", s, mix, len(mix), total)
		}
		again, err := ParseIMIX(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, mix) {
			t.Fatalf("ParseIMIX(%q) = %v; written back, %v, %v", s, mix, again, err)
		}
	})
}

// TestCounterCorruptStamps counts genuine flows with random loss,
// duplicates, reordering and a few stamps whose sequence number has one
// bit flipped (bits 10 to 62, each at least MaxSeqAhead ahead or far
// behind): lost stays the true loss plus the corrupted stamps' own
// numbers, give or take a few, and the flow stays one.
func TestCounterCorruptStamps(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		const n = 100000
		var out []uint64
		lost := 0
		for s := range uint64(n) {
			switch r.IntN(200) {
			case 0, 1:
				lost++
				continue
			case 2:
				out = append(out, s)
			}
			out = append(out, s)
		}
		for i := range out {
			if r.IntN(100) == 0 {
				if j := i + 1 + r.IntN(40); j < len(out) {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		corrupt := map[int]bool{}
		for range 10 {
			i := r.IntN(len(out))
			out[i] ^= 1 << (10 + r.IntN(53))
			corrupt[i] = true
		}
		var c Counter
		for _, s := range out {
			c.Add(Stamp{Run: 1, Seq: s})
		}
		tot := c.Totals()
		if d := int(tot.Lost) - lost - len(corrupt); d < -len(corrupt) || d > len(corrupt) || tot.Flows != 1 || tot.Untracked > uint64(len(corrupt)) {
			t.Errorf("seed %d: %+v; want lost near %d + %d corrupt, 1 flow", seed, tot, lost, len(corrupt))
		}
	}
}

// TestCounterHeavyLoss counts flows that keep only a few of every
// thousand packets, so that most gaps are over MaxSeqAhead: each stamp is
// held until the next follows it, and lost plus the counted packets is
// what was sent, but for the last stamp (which may stay untracked).
func TestCounterHeavyLoss(t *testing.T) {
	for _, keep := range []int{30, 10, 5} { // per 10000
		r := rand.New(rand.NewPCG(uint64(keep), 2))
		var c Counter
		const n = 2000000
		var prev, last uint64
		for s := range uint64(n) {
			if s == 0 || r.IntN(10000) < keep {
				c.Add(Stamp{Run: 1, Seq: s})
				prev, last = last, s
			}
		}
		tot := c.Totals()
		end := last + 1 // the span counted: up to the last stamp,
		if tot.Untracked == 1 {
			end = prev + 1 // or the one before when the last is held
		}
		if tot.Untracked > 1 || tot.Packets-tot.Untracked+tot.Lost != end || tot.Flows != 1 {
			t.Errorf("keeping %d in 10000: %+v; want lost + counted = %d, at most 1 untracked", keep, tot, end)
		}
	}
}

// TestStampCheck flips each bit of a stamp's run, flow, sequence number,
// send time and check: ParseStamp refuses every one.
func TestStampCheck(t *testing.T) {
	b := make([]byte, StampLen)
	s := Stamp{Run: 0x1234, Flow: 7, Seq: 100000, Tstamp: 1_700_000_000_000_000_000}
	PutStamp(b, s)
	if got, ok := ParseStamp(b); !ok || got != s {
		t.Fatalf("ParseStamp = %+v, %v", got, ok)
	}
	zero := make([]byte, StampLen)
	binary.BigEndian.PutUint32(zero, StampMagic)
	if got, ok := ParseStamp(zero); ok {
		t.Errorf("the magic and 28 zero bytes taken as %+v", got)
	}
	for i := 4 * 8; i < StampLen*8; i++ {
		b[i/8] ^= 1 << (i % 8)
		if got, ok := ParseStamp(b); ok {
			t.Errorf("bit %d flipped: taken as %+v", i, got)
		}
		b[i/8] ^= 1 << (i % 8)
	}
}

// TestCounterOneFlowPerRun checks SetOneFlowPerRun: a run's first flow
// counts, a stamp of its other flows is untracked, and runs sending at the
// same time each keep their own flow.
func TestCounterOneFlowPerRun(t *testing.T) {
	var c Counter
	c.SetOneFlowPerRun()
	for seq := range uint64(100) {
		c.Add(Stamp{Run: 1, Flow: 3, Seq: seq})
		c.Add(Stamp{Run: 2, Flow: 5, Seq: seq})
		if seq%10 == 0 {
			c.Add(Stamp{Run: 1, Flow: 4, Seq: seq * 1000}) // a stray of another port's flow
		}
	}
	if got, want := c.Totals(), (FlowTotals{Packets: 210, Flows: 2, Untracked: 10}); got != want {
		t.Errorf("Totals = %+v, want %+v", got, want)
	}

	// A stray first: it leads until the port's own flow takes over at its
	// second stamp; then the stray and that flow's first are untracked.
	var d Counter
	d.SetOneFlowPerRun()
	d.Add(Stamp{Run: 1, Flow: 4, Seq: 5000})
	for seq := range uint64(1000) {
		d.Add(Stamp{Run: 1, Flow: 3, Seq: seq})
	}
	d.Add(Stamp{Run: 1, Flow: 4, Seq: 9000})
	if got, want := d.Totals(), (FlowTotals{Packets: 1002, Flows: 1, Untracked: 3}); got != want {
		t.Errorf("a stray first: Totals = %+v, want %+v", got, want)
	}
}

// FuzzCounter adds stamps of a few flows and runs with arbitrary sequence
// numbers (near 0, near 2^63 and near 2^64, so that forged and wrapping
// ones come in): Add never panics, and the totals stay consistent with
// what was added (every packet counted once, no more late, duplicate or
// untracked packets than packets).
func FuzzCounter(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 2, 0, 3})
	f.Add([]byte{0x80, 0, 0, 1, 0, 2, 0x40, 3})
	f.Add([]byte{0xff, 0, 0xff, 1, 0, 0xfe, 0xc0, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		var c Counter
		n := uint64(0)
		for i := 0; i+1 < len(in); i += 2 {
			op, v := in[i], uint64(in[i+1])
			var s uint64
			switch op >> 6 {
			case 0:
				s = v
			case 1:
				s = v * 700
			case 2:
				s = 1<<63 + v
			case 3:
				s = ^uint64(0) - v
			}
			c.Add(Stamp{Run: uint32(op>>4) & 1, Flow: uint32(op & 3), Seq: s})
			n++
		}
		tot := c.Totals()
		if tot.Packets != n || tot.Untracked > n || tot.Reordered+tot.Duplicates+tot.Untracked > n {
			t.Fatalf("%d stamps added: %+v", n, tot)
		}
	})
}

// TestCounterLoneFirst covers a flow's first stamp far from the stamps
// after it: a stray first (forged, or at 2^64-1, where the next sequence
// number wraps) is untracked and costs no loss; a genuine first whose
// second stamp is a packet far behind it (a sink started in the middle of
// the flow) keeps the flow there, and that packet counts as late.
func TestCounterLoneFirst(t *testing.T) {
	span := func(a, b uint64) []uint64 {
		var v []uint64
		for s := a; s < b; s++ {
			v = append(v, s)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		seqs []uint64
		want FlowTotals
	}{
		{"forged at 2^40", append([]uint64{1 << 40}, span(0, 100)...), FlowTotals{Packets: 101, Flows: 1, Untracked: 1}},
		{"forged at 2^64-1", append([]uint64{^uint64(0)}, span(1<<40, 1<<40+100)...), FlowTotals{Packets: 101, Flows: 1, Untracked: 1}},
		{"mid-flow, a late second", append([]uint64{100000, 98000}, span(100001, 101000)...), FlowTotals{Packets: 1001, Reordered: 1, Flows: 1}},
		{"mid-flow, a late second, then nothing", []uint64{100000, 98000}, FlowTotals{Packets: 2, Flows: 1, Untracked: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Counter
			for _, s := range tc.seqs {
				c.Add(Stamp{Run: 1, Seq: s})
			}
			if got := c.Totals(); got != tc.want {
				t.Errorf("Totals = %+v, want %+v", got, tc.want)
			}
		})
	}
}
