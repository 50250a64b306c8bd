package traffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/skb"
)

// pair returns a memring pair closed, and checked for leaked buffers, when
// the test ends.
func pair(t testing.TB, cfg memring.Config) (a, b *memring.Device) {
	t.Helper()
	a, b, err := memring.NewPair(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return a, b
}

// pollAll polls s until a Poll hands over nothing.
func pollAll(t testing.TB, s *Sink) {
	t.Helper()
	for {
		n, err := s.Poll()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// runSink runs s on a goroutine of its own and sends its result when it
// ends; an error fails the test.
func runSink(t testing.TB, s *Sink) <-chan SinkResult {
	done := make(chan SinkResult, 1)
	go func() {
		r, err := s.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	return done
}

// pump sends with g and receives with s in one goroutine, a burst at a
// time, until g has queued want packets and s has drained the ring.
func pump(t testing.TB, g *Pktgen, s *Sink, want uint64) {
	t.Helper()
	for g.Queued() < want {
		if _, err := g.Burst(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	pollAll(t, s)
}

func TestPktgenSinkMemring(t *testing.T) {
	tests := []struct {
		name string
		cfg  PktgenConfig
		// want
		packets, dups uint64
		flows         int
	}{
		{"burst 1", PktgenConfig{Count: 1000}, 1000, 0, 1},
		{"burst 64, 8 flows", PktgenConfig{Count: 1000, Burst: 64, Flows: 8}, 1000, 0, 8},
		{"flow length 3", PktgenConfig{Count: 999, Burst: 10, Flows: 5, FlowLen: 3}, 999, 0, 5},
		{"imix", PktgenConfig{Count: 1200, Burst: 16, IMIX: DefaultIMIX}, 1200, 0, 1},
		{"clone 4", PktgenConfig{Count: 1000, Burst: 8, Clone: 4, Flows: 2}, 1000, 750, 2},
		{"clone uneven", PktgenConfig{Count: 10, Burst: 3, Clone: 4}, 10, 7, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, memring.Config{RingSize: 1024})
			g, err := NewPktgen(a, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s, err := NewSink(b, SinkConfig{})
			if err != nil {
				t.Fatal(err)
			}
			pump(t, g, s, tc.cfg.Count)
			if _, err := g.Burst(); err != nil { // the count is reached: sends nothing
				t.Fatal(err)
			}
			r := s.Result()
			if r.Packets != tc.packets || r.Lost != 0 || r.Reordered != 0 || r.Duplicates != tc.dups ||
				r.Flows != tc.flows || r.Unstamped != 0 {
				t.Errorf("sink result %+v: want %d packets, %d duplicates, %d flows, nothing lost or reordered",
					r, tc.packets, tc.dups, tc.flows)
			}
			if st := a.Stats(); st.TxPackets != tc.packets {
				t.Errorf("tx_packets %d, want %d", st.TxPackets, tc.packets)
			}
			if tc.cfg.IMIX != nil {
				want := uint64(0)
				for i := range tc.packets {
					want += uint64(schedule(tc.cfg.IMIX)[i%12])
				}
				if r.Bytes != want {
					t.Errorf("imix bytes %d, want %d", r.Bytes, want)
				}
			}
		})
	}
}

// TestPktgenDoorbells checks one doorbell per burst.
func TestPktgenDoorbells(t *testing.T) {
	for _, burst := range []int{1, 7, 64} {
		a, b := pair(t, memring.Config{RingSize: 1024})
		g, err := NewPktgen(a, PktgenConfig{Count: 640, Burst: burst})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewSink(b, SinkConfig{})
		pump(t, g, s, 640)
		st := a.Stats()
		if want := uint64((640 + burst - 1) / burst); st.TxDoorbells != want {
			t.Errorf("burst %d: %d doorbells, want %d", burst, st.TxDoorbells, want)
		}
	}
}

// labFrame is the frame template of a flow from port 4000 of src to port
// dport of dst, between the lab's MAC addresses.
func labFrame(src, dst string, dport uint16) *header.UDPFrame {
	return &header.UDPFrame{
		Source: header.MAC{2, 0, 0, 0, 0, 1}, Destination: header.MAC{2, 0, 0, 0, 0, 2},
		SourceIP: netip.MustParseAddr(src), DestinationIP: netip.MustParseAddr(dst),
		SourcePort: 4000, DestinationPort: dport,
	}
}

// gsoFramer is a memring device that hands over every frame as a GSO
// super-frame of seg-byte UDP segments, as afpacket does with its virtio
// header (memring itself carries no metadata), and says so when on.
type gsoFramer struct {
	*memring.Device
	on   bool
	seg  int
	segs int
}

func (g gsoFramer) GSOFrames() bool { return g.on }

func (g gsoFramer) Poll(budget int, h netdev.Handler) (int, error) {
	return g.Device.Poll(budget, func(b *skb.Buff) {
		b.SetGSO(g.seg, g.segs, skb.GSOUDPL4)
		h(b)
	})
}

// TestLinkGSOFrames has a link-layer sink count a UDP super-frame of four
// stamped 64-byte datagrams (GSOSize 64): as its four datagrams on a
// device that is a GSOFramer, in order and none lost, with its payload and
// frame counted once; as one frame, its GSO fields not read, on a device
// that says it hands over none.
func TestLinkGSOFrames(t *testing.T) {
	a, b := pair(t, memring.Config{RingSize: 64})
	uf := labFrame("198.18.0.1", "198.18.0.2", 9000)
	const seg, segs = 64, 4
	hl := uf.HeaderLen()
	for _, on := range []bool{true, false} {
		s, err := NewSink(gsoFramer{b, on, seg, segs}, SinkConfig{Link: true, Port: 9000})
		if err != nil {
			t.Fatal(err)
		}
		sendSuper(t, a, uf, seg, segs, 7, 0)
		if n, err := s.Poll(); n != 1 || err != nil {
			t.Fatalf("poll: %d, %v", n, err)
		}
		r := s.Result()
		want := uint64(segs)
		if !on {
			want = 1
		}
		if r.Packets != want || r.Lost != 0 || r.Reordered != 0 || r.Unstamped != 0 ||
			r.Bytes != seg*segs || r.FrameBytes != uint64(hl+seg*segs) {
			t.Errorf("GSOFrames %v: %+v, want %d packets of %d bytes in one frame", on, r, want, seg*segs)
		}
	}
}

// TestLinkMemring sends frames through a memring pair and has a link-layer
// sink count them; every frame's checksums verify.
func TestLinkMemring(t *testing.T) {
	a, b := pair(t, memring.Config{RingSize: 1024})
	frame := labFrame("198.18.0.1", "198.18.0.2", 9000)
	g, err := NewPktgen(a, PktgenConfig{Frame: frame, Count: 500, Burst: 32, Flows: 4, IMIX: DefaultIMIX})
	if err != nil {
		t.Fatal(err)
	}
	// A sink for port 9000 only sees flow 0.
	s, _ := NewSink(b, SinkConfig{Link: true, Port: 9000})
	pump(t, g, s, 500)
	r := s.Result()
	if r.Packets != 125 || r.Other != 375 || r.Lost != 0 || r.Flows != 1 {
		t.Errorf("port-filtered sink: %+v, want 125 packets of flow 0 and 375 others", r)
	}
	// Ports 9001 and 9002: flows 1 and 2.
	g3, _ := NewPktgen(a, PktgenConfig{Frame: frame, Count: 400, Burst: 32, Flows: 4})
	s3, _ := NewSink(b, SinkConfig{Link: true, Port: 9001, Ports: 2})
	pump(t, g3, s3, 400)
	if r := s3.Result(); r.Packets != 200 || r.Other != 200 || r.Flows != 2 || r.Lost != 0 {
		t.Errorf("two-port sink: %+v, want 200 packets of flows 1 and 2", r)
	}

	// An address: frames to another destination count as other.
	for _, tc := range []struct {
		addr  string
		count uint64
	}{{"198.18.0.2", 100}, {"::ffff:198.18.0.2", 100}, {"198.18.0.3", 0}} {
		ga, _ := NewPktgen(a, PktgenConfig{Frame: frame, Count: 100, Burst: 32})
		sa, _ := NewSink(b, SinkConfig{Link: true, Port: 9000, Addr: netip.MustParseAddr(tc.addr)})
		pump(t, ga, sa, 100)
		if r := sa.Result(); r.Packets != tc.count || r.Other != 100-tc.count {
			t.Errorf("sink for %s: %+v, want %d packets, the rest other", tc.addr, r, tc.count)
		}
	}

	// Any port: all flows; and the checksums hold.
	g2, _ := NewPktgen(a, PktgenConfig{Frame: frame, Count: 200, Burst: 8, Flows: 4})
	bad := 0
	c := b.Cache()
	for g2.Queued() < 200 {
		g2.Burst()
		b.Poll(64, func(p *skb.Buff) {
			f, err := header.ParseFrame(p.Data())
			if err != nil || f.VerifyChecksum(p.Data()) != nil {
				bad++
			}
			c.Free(p)
		})
	}
	if bad != 0 {
		t.Errorf("%d frames failed to parse or verify", bad)
	}
}

// TestLinkBytes checks that a generator and a sink on a link-layer device
// count UDP payload bytes in Bytes and Mbps, as on a datagram device, and
// the whole frames in FrameBytes and FrameMbps; and that an echo server
// counts payload bytes too. The frames carry Ethernet (14), IPv4 (20) or
// IPv6 (40) and UDP (8) headers.
func TestLinkBytes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src, dst string
		hdr      uint64
	}{
		{"ipv4", "198.18.0.1", "198.18.0.2", 14 + 20 + 8},
		{"ipv6", "2001:2::1", "2001:2::2", 14 + 40 + 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, memring.Config{RingSize: 1024})
			frame := labFrame(tc.src, tc.dst, 9000)
			const n, size = 300, 100
			var ivs []PktgenInterval
			g, err := NewPktgen(a, PktgenConfig{Frame: frame, Count: n, Burst: 32, Size: size,
				OnInterval: func(iv PktgenInterval) { ivs = append(ivs, iv) }, Interval: time.Nanosecond})
			if err != nil {
				t.Fatal(err)
			}
			r, err := g.Run(context.Background()) // the ring holds all of them
			if err != nil {
				t.Fatal(err)
			}
			if r.Packets != n || r.Bytes != n*size || r.FrameBytes != n*(size+tc.hdr) || r.Mbps <= 0 ||
				math.Abs(r.FrameMbps/r.Mbps-float64(size+tc.hdr)/size) > 1e-9 {
				t.Errorf("pktgen %+v: want %d payload bytes, %d frame bytes", r, n*size, n*(size+tc.hdr))
			}
			if len(ivs) == 0 {
				t.Error("no interval")
			}
			for _, iv := range ivs {
				if iv.Bytes*(size+tc.hdr) != iv.FrameBytes*size {
					t.Errorf("pktgen interval %+v: payload and frame bytes disagree", iv)
				}
			}
			s, err := NewSink(b, SinkConfig{Link: true, Port: 9000})
			if err != nil {
				t.Fatal(err)
			}
			pollAll(t, s)
			sr := s.Result()
			if sr.Packets != n || sr.Bytes != n*size || sr.FrameBytes != n*(size+tc.hdr) {
				t.Errorf("sink %+v: want %d payload bytes, %d frame bytes", sr, n*size, n*(size+tc.hdr))
			}

			// Echo: a generator's frames to the echo's port, answered.
			g2, _ := NewPktgen(a, PktgenConfig{Frame: frame, Count: 50, Burst: 50, Size: size})
			if _, err := g2.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			er, err := Echo(ctx, b, EchoConfig{Link: true, Port: 9000, Count: 50})
			if err != nil || er.Echoed != 50 || er.Bytes != 50*size {
				t.Errorf("echo %+v, %v: want 50 answers of %d payload bytes", er, err, size)
			}
			drain := a.Cache()
			a.Poll(64, func(p *skb.Buff) { drain.Free(p) })
		})
	}
}

// TestLinkOtherFramesNotTraffic sends a link-layer sink and echo server,
// each with a short Idle, frames that are not for them (UDP to another
// port) first: those count in Other and neither end the wait for the
// first packet nor start the idle time, so the sink and the server run
// until the frames for them come 150 ms later, and the sink's span (its
// Seconds) covers those alone.
func TestLinkOtherFramesNotTraffic(t *testing.T) {
	const later = 150 * time.Millisecond
	send := func(t *testing.T, a *memring.Device, port uint16, n uint64) {
		g, err := NewPktgen(a, PktgenConfig{Frame: labFrame("198.18.0.1", "198.18.0.2", port), Count: n, Burst: int(n)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Run(context.Background()); err != nil {
			t.Error(err)
		}
	}
	t.Run("sink", func(t *testing.T) {
		a, b := pair(t, memring.Config{})
		send(t, a, 9999, 3)
		s, _ := NewSink(b, SinkConfig{Link: true, Port: 9000, Idle: 50 * time.Millisecond, Duration: 10 * time.Second})
		done := runSink(t, s)
		time.Sleep(later)
		send(t, a, 9000, 10)
		r := <-done
		if r.Packets != 10 || r.Other != 3 || r.Seconds >= later.Seconds()/2 {
			t.Errorf("%+v; want 10 packets in well under %v, 3 other frames", r, later)
		}
	})
	t.Run("echo", func(t *testing.T) {
		a, b := pair(t, memring.Config{})
		send(t, a, 9999, 3)
		done := make(chan EchoResult, 1)
		go func() {
			r, err := Echo(context.Background(), b, EchoConfig{Link: true, Port: 9000, Idle: 50 * time.Millisecond, Duration: 10 * time.Second})
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		time.Sleep(later)
		send(t, a, 9000, 10)
		r := <-done
		if r.Echoed != 10 || r.Other != 3 {
			t.Errorf("%+v; want 10 echoed, 3 other frames", r)
		}
		drain := a.Cache()
		a.Poll(64, func(p *skb.Buff) { drain.Free(p) })
	})
}

func TestSinkRunBounds(t *testing.T) {
	a, b := pair(t, memring.Config{})
	_ = a
	// No traffic: the duration ends the run.
	s, _ := NewSink(b, SinkConfig{Duration: 50 * time.Millisecond})
	t0 := time.Now()
	r, err := s.Run(context.Background())
	if err != nil || r.Packets != 0 {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	if el := time.Since(t0); el < 50*time.Millisecond || el > 2*time.Second {
		t.Errorf("50ms run took %v", el)
	}
	// A cancelled context ends it at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _ = NewSink(b, SinkConfig{})
	t0 = time.Now()
	if _, err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > time.Second {
		t.Errorf("cancelled run took %v", el)
	}
}

// TestRunTwoGoroutines runs the generator and the sink with Run on two
// goroutines, with a rate limit, counts and intervals.
func TestRunTwoGoroutines(t *testing.T) {
	a, b := pair(t, memring.Config{RingSize: 4096})
	const n = 3000
	var ivs []SinkInterval
	s, _ := NewSink(b, SinkConfig{Count: n, Duration: 10 * time.Second, Interval: 50 * time.Millisecond,
		OnInterval: func(iv SinkInterval) { ivs = append(ivs, iv) }})
	done := runSink(t, s)
	var givs []PktgenInterval
	g, _ := NewPktgen(a, PktgenConfig{Count: n, Rate: 20000, Burst: 4, Flows: 3, Interval: 50 * time.Millisecond,
		OnInterval: func(iv PktgenInterval) { givs = append(givs, iv) }})
	gr, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sr := <-done
	if gr.Packets != n || gr.Queued != n || gr.Errors != 0 || gr.Doorbells != n/4 || gr.Flows != 3 {
		t.Errorf("pktgen result %+v", gr)
	}
	if gr.Seconds < 0.1 {
		t.Errorf("%d packets at 20000/s took %.3fs, under the 0.15s the rate allows", n, gr.Seconds)
	}
	if sr.Packets != n || sr.Lost != 0 || sr.Reordered != 0 || sr.Flows != 3 || sr.Latency.Count != n {
		t.Errorf("sink result %+v", sr)
	}
	if len(givs) == 0 || len(ivs) == 0 {
		t.Errorf("%d pktgen and %d sink intervals, want some", len(givs), len(ivs))
	}
	for who, ps := range map[string][]uint64{"pktgen": pktgenPackets(givs), "sink": sinkPackets(ivs)} {
		var sum uint64
		for _, p := range ps {
			sum += p
		}
		if sum != n {
			t.Errorf("%s intervals add up to %d packets, not the run's %d", who, sum, n)
		}
	}
}

func pktgenPackets(ivs []PktgenInterval) []uint64 {
	var ps []uint64
	for _, iv := range ivs {
		ps = append(ps, iv.Packets)
	}
	return ps
}

func sinkPackets(ivs []SinkInterval) []uint64 {
	var ps []uint64
	for _, iv := range ivs {
		ps = append(ps, iv.Packets)
	}
	return ps
}

// TestSinkLastInterval runs a sink for a whole number of Intervals under
// steady traffic, and one that ends idle partway through an Interval: the
// first reports its last whole interval, which ends at the duration or
// after it, the second its part interval, which ends before the next
// tick would, and the intervals of each add up to the result.
func TestSinkLastInterval(t *testing.T) {
	const every = 40 * time.Millisecond
	for _, tc := range []struct {
		name string
		cfg  SinkConfig
		n    uint64 // packets sent; 0: steady until the sink ends
	}{
		{"duration", SinkConfig{Duration: 3 * every, Idle: -1}, 0},
		{"idle", SinkConfig{Duration: 10 * time.Second, Idle: 20 * time.Millisecond}, 500},
	} {
		a, b := pair(t, memring.Config{RingSize: 4096})
		var ivs []SinkInterval
		cfg := tc.cfg
		cfg.Interval = 25 * every // the idle run ends in its first
		if tc.n == 0 {
			cfg.Interval = every
		}
		cfg.OnInterval = func(iv SinkInterval) { ivs = append(ivs, iv) }
		s, err := NewSink(b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		done := runSink(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		g, _ := NewPktgen(a, PktgenConfig{Count: tc.n, Rate: 20000, Burst: 4})
		gen := make(chan struct{})
		go func() {
			defer close(gen)
			if _, err := g.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
		r := <-done
		cancel()
		<-gen
		var sum uint64
		for _, iv := range ivs {
			sum += iv.Packets
		}
		if sum != r.Packets || r.Packets == 0 || tc.n != 0 && r.Packets != tc.n {
			t.Errorf("%s: intervals add up to %d packets, result %d (sent %d)", tc.name, sum, r.Packets, tc.n)
		}
		if len(ivs) == 0 {
			t.Errorf("%s: no interval", tc.name)
			continue
		}
		last := ivs[len(ivs)-1]
		switch {
		case tc.n == 0 && (len(ivs) < 2 || len(ivs) > 3 || last.Elapsed < cfg.Duration):
			// (2 when a loaded machine held a tick back past the next.)
			t.Errorf("%s: %d intervals, the last ending at %v; want 3, the last at %v or later", tc.name, len(ivs), last.Elapsed, cfg.Duration)
		case tc.n != 0 && (len(ivs) != 1 || last.Elapsed >= cfg.Interval || last.Packets != tc.n):
			t.Errorf("%s: intervals %+v; want one part interval of %d packets", tc.name, ivs, tc.n)
		}
	}
}

// echoOn runs Echo with cfg on dev in a goroutine, failing t on its
// error; stop ends it and returns its result.
func echoOn(t *testing.T, dev netdev.Device, cfg EchoConfig) (stop func() EchoResult) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := make(chan EchoResult, 1)
	go func() {
		r, err := Echo(ctx, dev, cfg)
		if err != nil {
			t.Error(err)
		}
		srv <- r
	}()
	return func() EchoResult {
		cancel()
		return <-srv
	}
}

func TestPingPongMemring(t *testing.T) {
	for _, busy := range []bool{false, true} {
		a, b := pair(t, memring.Config{})
		stop := echoOn(t, b, EchoConfig{Spin: busy})
		r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 300, BusyPoll: busy, Size: 100})
		sr := stop()
		if err != nil {
			t.Fatal(err)
		}
		if r.Iters != 300 || r.Lost != 0 || r.Bytes != 300*100*2 || r.P50 <= 0 || r.P999 < r.P50 || r.Max < r.P999 ||
			r.UsecPerIter <= 0 || r.Mbps <= 0 {
			t.Errorf("busy %v: %+v", busy, r)
		}
		if sr.Echoed != 330 || sr.Errors != 0 { // 30 warm-up round trips
			t.Errorf("busy %v: echo %+v, want 330 answers", busy, sr)
		}
	}
}

func TestPingPongLinkMemring(t *testing.T) {
	a, b := pair(t, memring.Config{})
	frame := labFrame("198.18.0.1", "198.18.0.2", 9100)
	ctx, cancel := context.WithCancel(context.Background())
	srv := make(chan EchoResult)
	go func() {
		r, _ := Echo(ctx, b, EchoConfig{Link: true, Port: 9100, Addr: frame.DestinationIP})
		srv <- r
	}()
	r, err := PingPong(context.Background(), a, PingPongConfig{Frame: frame, Iters: 100, Warmup: -1})
	cancel()
	sr := <-srv
	if err != nil || r.Iters != 100 || sr.Echoed != 100 {
		t.Fatalf("pingpong %+v, %v; echo %+v", r, err, sr)
	}
}

// answer runs an echo server of the test's own on b until stop is called:
// f sees the n-th packet (from 1) and returns true to send it back, false
// when it dropped it (and freed it).
func answer(b *memring.Device, f func(n int, x *skb.Buff) bool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for ctx.Err() == nil {
			b.Poll(8, func(x *skb.Buff) {
				n++
				if f(n, x) {
					b.Xmit(x, false)
				}
			})
			b.Wait(time.Millisecond)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// TestPingPongNoReply checks that NoReplyTries first requests without a
// reply within Timeout end the run with ErrNoReply, each counted in Lost;
// that a reply after a lost first request lets the run go on; and that
// replies cut short or grown are not taken for round trips.
func TestPingPongNoReply(t *testing.T) {
	a, _ := pair(t, memring.Config{})
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 5, Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrNoReply) || r.Lost != NoReplyTries || r.Iters != 0 {
		t.Fatalf("%+v, %v; want ErrNoReply, %d requests lost", r, err, NoReplyTries)
	}

	// A server that drops its first request and answers the next ones
	// with their length changed by delta (0: as they came).
	for _, delta := range []int{0, -1, 1} {
		a, b := pair(t, memring.Config{})
		stop := answer(b, func(n int, x *skb.Buff) bool {
			if n == 1 {
				b.Cache().Free(x)
				return false
			}
			if delta < 0 {
				x.Trim(x.Len() + delta)
			} else if delta > 0 {
				x.Put(delta)
			}
			return true
		})
		r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 5, Warmup: -1, Timeout: 50 * time.Millisecond})
		stop()
		if delta == 0 && (err != nil || r.Iters != 4 || r.Lost != 1) {
			t.Errorf("first request dropped: %+v, %v; want 4 round trips, 1 lost", r, err)
		}
		if delta != 0 && (!errors.Is(err, ErrNoReply) || r.Iters != 0 || r.Stray != NoReplyTries-1) {
			t.Errorf("replies %+d bytes long: %+v, %v; want ErrNoReply, %d stray", delta, r, err, NoReplyTries-1)
		}
	}
}

// TestPingPongLateReply has a server that answers every request 15 ms
// late: with a Timeout of 3 ms, shorter than the 20 ms slice the client
// waits in, each reply is late, so the run ends with ErrNoReply after
// NoReplyTries requests, each lost and none taken for a round trip, and
// no wait outlasts the Timeout by much; with a Timeout of 200 ms every
// reply is a round trip of 15 ms or more.
func TestPingPongLateReply(t *testing.T) {
	const delay = 15 * time.Millisecond
	for _, timeout := range []time.Duration{3 * time.Millisecond, 200 * time.Millisecond} {
		a, b := pair(t, memring.Config{})
		stop := answer(b, func(int, *skb.Buff) bool {
			time.Sleep(delay)
			return true
		})
		var ivs []PingPongInterval
		t0 := time.Now()
		r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 5, Warmup: -1, Timeout: timeout,
			Interval: time.Hour, OnInterval: func(iv PingPongInterval) { ivs = append(ivs, iv) }})
		el := time.Since(t0)
		stop()
		if timeout < delay {
			// Each request waits its Timeout: a few ms in all, bounded
			// loosely for a loaded machine.
			if !errors.Is(err, ErrNoReply) || r.Iters != 0 || r.Lost != NoReplyTries || len(ivs) != 0 || el > 2*time.Second {
				t.Errorf("timeout %v: %+v, %v after %v, %d intervals; want ErrNoReply, %d lost, no round trip", timeout, r, err, el, len(ivs), NoReplyTries)
			}
			continue
		}
		if err != nil || r.Iters != 5 || r.Lost != 0 || r.Min < delay || r.Max > timeout {
			t.Errorf("timeout %v: %+v, %v; want 5 round trips of %v or more", timeout, r, err, delay)
		}
		// One interval, the run's last, reported at its end: its time
		// over Iters is the result's.
		if len(ivs) != 1 || ivs[0].Iters != 5 || math.Abs(ivs[0].UsecPerIter-r.UsecPerIter) > 1e-6*r.UsecPerIter {
			t.Errorf("timeout %v: intervals %+v; want one of 5 round trips at the result's %.1f usec/iter", timeout, ivs, r.UsecPerIter)
		}
	}
}

// TestPingPongLateCounted has a server that answers its first request
// 300 ms late and the others at once, with a Timeout of 200 ms: the first
// request is lost and its reply, which comes while the second is
// awaited, counts as late (and stray); the other four are round trips.
func TestPingPongLateCounted(t *testing.T) {
	a, b := pair(t, memring.Config{})
	stop := answer(b, func(n int, _ *skb.Buff) bool {
		if n == 1 {
			time.Sleep(300 * time.Millisecond)
		}
		return true
	})
	// The second request waits 100 ms for its reply, behind the first's:
	// well within its Timeout on a loaded machine too.
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 5, Warmup: -1, Timeout: 200 * time.Millisecond})
	stop()
	if err != nil || r.Iters != 4 || r.Lost != 1 || r.Late != 1 || r.Stray != 1 {
		t.Errorf("%+v, %v; want 4 round trips, 1 lost and late, 1 stray", r, err)
	}
}

// TestEchoIntervalsAddUp runs a server with a one-hour Interval whose run
// ends by its Count: the one interval it reports, at the end, holds every
// packet it echoed.
func TestEchoIntervalsAddUp(t *testing.T) {
	a, b := pair(t, memring.Config{})
	var ivs []EchoInterval
	srv := make(chan EchoResult, 1)
	go func() {
		r, _ := Echo(context.Background(), b, EchoConfig{Count: 30, Idle: -1, Duration: time.Minute,
			Interval: time.Hour, OnInterval: func(iv EchoInterval) { ivs = append(ivs, iv) }})
		srv <- r
	}()
	if _, err := PingPong(context.Background(), a, PingPongConfig{Iters: 30, Warmup: -1}); err != nil {
		t.Fatal(err)
	}
	r := <-srv
	var sum uint64
	for _, iv := range ivs {
		sum += iv.Echoed
	}
	if r.Echoed != 30 || len(ivs) != 1 || sum != r.Echoed {
		t.Errorf("echoed %d; intervals %+v; want 30, in one last interval", r.Echoed, ivs)
	}
}

// TestPingPongLateDuplicated has a server that sends every reply twice
// and answers its first request 300 ms late: the first request is lost,
// its reply late once (not once per copy), and the copies of the other
// replies are stray, not late.
func TestPingPongLateDuplicated(t *testing.T) {
	a, b := pair(t, memring.Config{})
	stop := answer(b, func(n int, x *skb.Buff) bool {
		if n == 1 {
			time.Sleep(300 * time.Millisecond)
		}
		b.Xmit(b.Cache().Clone(x), true)
		return true
	})
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 20, Warmup: -1, Timeout: 200 * time.Millisecond})
	stop()
	if err != nil || r.Iters != 19 || r.Lost != 1 || r.Late != 1 || r.Stray < 20 {
		t.Errorf("%+v, %v; want 19 round trips, 1 lost and late, 2 copies of the lost one's reply and one of each other stray", r, err)
	}
}

// TestPingPongDurationBoundsWait checks that Duration ends a run while a
// reply is awaited, not Duration plus Timeout: with nothing answering, and
// with a server that stops answering after 50 requests. The request the
// end cut off counts as neither answered nor lost.
func TestPingPongDurationBoundsWait(t *testing.T) {
	a, _ := pair(t, memring.Config{})
	t0 := time.Now()
	_, err := PingPong(context.Background(), a, PingPongConfig{Iters: 5, Timeout: 10 * time.Second, Duration: 200 * time.Millisecond})
	if el := time.Since(t0); !errors.Is(err, ErrNoReply) || el > 5*time.Second {
		t.Errorf("nothing answering: %v after %v, want ErrNoReply after about 200ms", err, el)
	}

	a, b := pair(t, memring.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := make(chan EchoResult, 1)
	go func() {
		r, _ := Echo(ctx, b, EchoConfig{Count: 50, Idle: -1, Duration: time.Minute})
		srv <- r
	}()
	t0 = time.Now()
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 1000000, Warmup: -1, Timeout: 10 * time.Second,
		Duration: 500 * time.Millisecond})
	el := time.Since(t0)
	cancel()
	<-srv
	if err != nil || r.Iters != 50 || r.Lost != 0 || el > 5*time.Second {
		t.Errorf("server stopping after 50: %+v, %v after %v; want 50 measured, none lost, about 500ms", r, err, el)
	}
}

func TestConfigErrors(t *testing.T) {
	a, b := pair(t, memring.Config{})
	frame := &header.UDPFrame{SourceIP: netip.MustParseAddr("198.18.0.1"), DestinationIP: netip.MustParseAddr("198.18.0.2"),
		SourcePort: 1, DestinationPort: 9000}
	for name, cfg := range map[string]PktgenConfig{
		"small size":       {Size: 10},
		"huge size":        {Size: 70000},
		"flows":            {Flows: MaxFlows + 1},
		"negative flows":   {Flows: -1},
		"burst":            {Burst: MaxBurst + 1},
		"negative clone":   {Clone: -2},
		"rate":             {Rate: -1},
		"duration":         {Duration: -time.Second},
		"gso no segmenter": {GSO: true},
		"gso frames":       {GSO: true, Frame: frame},
		"dst and frame":    {Dst: netip.MustParseAddrPort("127.0.0.1:9"), Frame: frame},
		"dst no xmitto":    {Dst: netip.MustParseAddrPort("127.0.0.1:9")},
		"ports overflow":   {Frame: &header.UDPFrame{SourceIP: frame.SourceIP, DestinationIP: frame.DestinationIP, DestinationPort: 65535}, Flows: 2},
		"bad frame":        {Frame: &header.UDPFrame{DestinationPort: 9}},
		"bad imix":         {IMIX: []IMIXEntry{{64, 0}}},
	} {
		if _, err := NewPktgen(a, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: NewPktgen error %v, want ErrConfig", name, err)
		}
	}
	// A size below the stamp, with no imix: the message speaks of the size.
	if _, err := NewPktgen(a, PktgenConfig{Size: StampLen - 1}); err == nil || strings.Contains(err.Error(), "imix") || !strings.Contains(err.Error(), "size") {
		t.Errorf("size %d: %v; want an error about the size, not an imix", StampLen-1, err)
	}
	for name, cfg := range map[string]PingPongConfig{
		"small size": {Size: 1},
		"iters":      {Iters: MaxIters + 1},
		"no xmitto":  {Dst: netip.MustParseAddrPort("127.0.0.1:9")},
		"no ports":   {Frame: &header.UDPFrame{SourceIP: frame.SourceIP, DestinationIP: frame.DestinationIP}},
	} {
		if _, err := PingPong(context.Background(), a, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: PingPong error %v, want ErrConfig", name, err)
		}
	}
	if _, err := NewSink(b, SinkConfig{Budget: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("NewSink budget -1: %v", err)
	}
	if _, err := Echo(context.Background(), b, EchoConfig{Budget: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("Echo budget -1: %v", err)
	}
	if _, err := RunSinks(context.Background(), nil, SinkConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("RunSinks without devices: %v", err)
	}
}

// TestClosedDevice checks that the engines stop with net.ErrClosed when
// their device is closed under them.
func TestClosedDevice(t *testing.T) {
	a, b, err := memring.NewPair(memring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := NewPktgen(a, PktgenConfig{Clone: 3})
	s, _ := NewSink(b, SinkConfig{})
	a.Close()
	b.Close()
	if _, err := g.Run(context.Background()); !errors.Is(err, netdev.ErrClosed) {
		t.Errorf("pktgen on a closed device: %v", err)
	}
	if _, err := s.Run(context.Background()); !errors.Is(err, netdev.ErrClosed) {
		t.Errorf("sink on a closed device: %v", err)
	}
	if _, err := PingPong(context.Background(), a, PingPongConfig{}); !errors.Is(err, netdev.ErrClosed) {
		t.Errorf("pingpong on a closed device: %v", err)
	}
	if _, err := Echo(context.Background(), b, EchoConfig{}); !errors.Is(err, netdev.ErrClosed) {
		t.Errorf("echo on a closed device: %v", err)
	}

	// Closed under a running sink, from another goroutine.
	a, b, err = memring.NewPair(memring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, _ = NewSink(b, SinkConfig{Duration: 10 * time.Second})
	time.AfterFunc(50*time.Millisecond, func() { b.Close() })
	t0 := time.Now()
	if _, err := s.Run(context.Background()); !errors.Is(err, netdev.ErrClosed) {
		t.Errorf("sink closed under it: %v", err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("sink took %v to notice its device closed", el)
	}
}

// TestZeroAllocs asserts that steady state allocates nothing per packet:
// a generator burst and a sink poll, over memring.
func TestZeroAllocs(t *testing.T) {
	frame := &header.UDPFrame{SourceIP: netip.MustParseAddr("198.18.0.1"), DestinationIP: netip.MustParseAddr("198.18.0.2"),
		SourcePort: 1, DestinationPort: 9000}
	for name, cfg := range map[string]PktgenConfig{
		"burst 1":        {},
		"burst 64 flows": {Burst: 64, Flows: 64},
		"clone":          {Burst: 32, Clone: 8},
		"imix":           {Burst: 16, IMIX: DefaultIMIX},
		"frames":         {Burst: 32, Frame: frame, Flows: 4},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := pair(t, memring.Config{RingSize: 1024})
			g, err := NewPktgen(a, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			s, _ := NewSink(b, SinkConfig{Link: cfg.Frame != nil})
			step := func() {
				if _, err := g.Burst(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Poll(); err != nil {
					t.Fatal(err)
				}
			}
			for range 100 { // warm the caches and the flow table
				step()
			}
			if n := testing.AllocsPerRun(200, step); n != 0 {
				t.Errorf("%v allocations per burst, want 0", n)
			}
			if r := s.Result(); r.Lost != 0 || r.Packets == 0 {
				t.Errorf("sink %+v", r)
			}
		})
	}
}

// slowAllocDev is a memring device whose first Alloc takes delay, as a
// pool filling its cache does on the first request of a run.
type slowAllocDev struct {
	*memring.Device
	delay time.Duration
	slept bool
}

func (d *slowAllocDev) Alloc(n int) (*skb.Buff, error) {
	if !d.slept {
		d.slept = true
		time.Sleep(d.delay)
	}
	return d.Cache().Alloc(n)
}

// TestPingPongSpan checks that the span of the measured round trips
// (Seconds, UsecPerIter, Mbps) starts where the first measured round trip
// starts, after its request was built: a slow first allocation without a
// warm-up is in no round trip, so UsecPerIter is at least the mean round
// trip and, for one round trip, equal to it.
func TestPingPongSpan(t *testing.T) {
	for _, iters := range []int{1, 5} {
		a, b := pair(t, memring.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		srv := make(chan struct{})
		go func() {
			Echo(ctx, b, EchoConfig{})
			close(srv)
		}()
		dev := &slowAllocDev{Device: a, delay: 50 * time.Millisecond}
		r, err := PingPong(context.Background(), dev, PingPongConfig{Iters: iters, Warmup: -1})
		cancel()
		<-srv
		if err != nil || r.Iters != iters {
			t.Fatalf("%d round trips: %+v, %v", iters, r, err)
		}
		mean := float64(r.Mean) / 1e3
		if r.UsecPerIter < mean-0.01 {
			t.Errorf("%d round trips: usec/iter %.3f below the mean round trip %.3f us", iters, r.UsecPerIter, mean)
		}
		if iters == 1 && math.Abs(r.UsecPerIter-mean) > 0.01 {
			t.Errorf("1 iter: usec/iter %.3f, want the round trip %.3f us (seconds %v)", r.UsecPerIter, mean, r.Seconds)
		}
		if span := time.Duration(r.Seconds * 1e9); span >= dev.delay {
			t.Errorf("%d round trips: the span %v holds the %v first allocation", iters, span, dev.delay)
		}
	}
}

// TestSinkOnePollSpan checks the span of a run whose packets all came in
// one Poll: it ends with that Poll, so the rate is not 0; a single packet
// has no span and no rate.
func TestSinkOnePollSpan(t *testing.T) {
	for _, n := range []uint64{10, 1} {
		a, b := pair(t, memring.Config{RingSize: 64})
		g, err := NewPktgen(a, PktgenConfig{Count: n, Burst: int(n)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Burst(); err != nil {
			t.Fatal(err)
		}
		g.Close()
		s, err := NewSink(b, SinkConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Poll(); err != nil || uint64(got) != n {
			t.Fatalf("Poll = %d, %v: want the %d packets at once", got, err, n)
		}
		r := s.Result()
		switch {
		case r.Packets != n:
			t.Errorf("%d packets, want %d", r.Packets, n)
		case n > 1 && (r.Seconds <= 0 || r.PPS <= 0 || r.Mbps <= 0):
			t.Errorf("%d packets in one Poll: seconds %v, pps %v, Mbit/s %v: want a span and rates", n, r.Seconds, r.PPS, r.Mbps)
		case n == 1 && (r.Seconds != 0 || r.PPS != 0):
			t.Errorf("one packet: seconds %v, pps %v: want 0 (no span)", r.Seconds, r.PPS)
		}
	}
	// The same through a group, as the tool runs its sinks.
	for _, n := range []uint64{10, 1} {
		tx, rx := pairs(t, 2, memring.Config{RingSize: 64})
		g, err := NewPktgen(tx[0], PktgenConfig{Count: n, Burst: int(n)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Burst(); err != nil {
			t.Fatal(err)
		}
		g.Close()
		r, err := RunSinks(context.Background(), rx, SinkConfig{Count: n, Duration: 5 * time.Second})
		switch {
		case err != nil || r.Packets != n:
			t.Errorf("group: %+v, %v: want %d packets", r, err, n)
		case n > 1 && r.PPS <= 0:
			t.Errorf("group, %d packets in one Poll: pps %v, want a rate", n, r.PPS)
		case n == 1 && (r.Seconds != 0 || r.PPS != 0):
			t.Errorf("group, one packet: seconds %v, pps %v: want 0 (no span)", r.Seconds, r.PPS)
		}
	}
}

// TestSinkForgedStamps checks that stamps whose send time is far from the
// receipt (0, the most negative, the far future) are counted but not timed.
func TestSinkForgedStamps(t *testing.T) {
	a, b := pair(t, memring.Config{RingSize: 64})
	now := time.Now().UnixNano()
	var sts []Stamp
	for i, ts := range []int64{0, math.MinInt64, math.MaxInt64, now} {
		sts = append(sts, Stamp{Run: 7, Seq: uint64(i), Tstamp: ts})
	}
	sendStamps(t, a, sts)
	s, err := NewSink(b, SinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Poll(); n != 4 || err != nil {
		t.Fatalf("Poll = %d, %v: want the 4 packets", n, err)
	}
	r := s.Result()
	if r.Packets != 4 || r.Lost != 0 || r.Latency.Count != 1 || r.Latency.Max > MaxLatency {
		t.Errorf("packets %d, lost %d, latency %+v: want 4 packets, 1 timed, under %v", r.Packets, r.Lost, r.Latency, MaxLatency)
	}
}

// TestSinkForgedSeq checks that a stamp with a sequence number far from
// its flow's counts as unstamped, not as 2^63 lost packets.
func TestSinkForgedSeq(t *testing.T) {
	a, b := pair(t, memring.Config{RingSize: 64})
	var sts []Stamp
	for _, seq := range []uint64{0, 1, 1 << 63, 2} {
		sts = append(sts, Stamp{Run: 9, Seq: seq, Tstamp: time.Now().UnixNano()})
	}
	sendStamps(t, a, sts)
	s, err := NewSink(b, SinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pollAll(t, s)
	if r := s.Result(); r.Packets != 4 || r.Lost != 0 || r.Unstamped != 1 {
		t.Errorf("packets %d, lost %d, unstamped %d: want 4, 0, 1", r.Packets, r.Lost, r.Unstamped)
	}
}

// sendStamps sends one 64-byte datagram stamped with each of sts through
// a, with one doorbell.
func sendStamps(t testing.TB, a *memring.Device, sts []Stamp) {
	t.Helper()
	for _, st := range sts {
		p, err := a.Cache().Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		PutStamp(p.Put(64), st)
		if err := a.Xmit(p, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
}

// sendSuper sends one frame of uf holding segs seg-byte UDP segments
// through a, stamped run with sequence numbers seq0 on: the frame of a
// GSO super-frame as a veth hands it over whole.
func sendSuper(t testing.TB, a netdev.Device, uf *header.UDPFrame, seg, segs int, run uint32, seq0 uint64) {
	t.Helper()
	hl := uf.HeaderLen()
	buf, err := a.Cache().Alloc(hl + seg*segs)
	if err != nil {
		t.Fatal(err)
	}
	f := buf.Put(hl + seg*segs)
	clear(f)
	for k := range segs {
		PutStamp(f[hl+k*seg:], Stamp{Run: run, Seq: seq0 + uint64(k), Tstamp: 1})
	}
	if _, err := header.BuildUDP(f, uf); err != nil {
		t.Fatal(err)
	}
	if err := a.Xmit(buf, false); err != nil {
		t.Fatal(err)
	}
}

// TestPktgenRateLastBurst runs a rate-limited generator whose bursts do
// not divide its duration: the last burst is cut to what the rate allows
// before the end, so the run sends at most rate x duration (+1), not a
// whole burst more.
func TestPktgenRateLastBurst(t *testing.T) {
	a, _ := pair(t, memring.Config{RingSize: 1024})
	r := runGen(t, a, PktgenConfig{Rate: 1000, Burst: 64, Duration: 300 * time.Millisecond})
	// Bursts of 64 at 0, 64, 128, 192 and 256 ms, the last cut to 44.
	if r.Packets > 301 || r.Packets < 256 {
		t.Errorf("%d packets in 300ms at 1000/s in bursts of 64: want at most 301 (320 uncut), at least 256", r.Packets)
	}
}

// TestPktgenRateCount runs rate-limited generators that end by their
// count: the run lasts until the rate has paid for the last burst (the
// count over the rate), so its rate is the one asked for, not that of the
// last burst's send alone; the duration still bounds it.
func TestPktgenRateCount(t *testing.T) {
	for _, tc := range []struct {
		rate           float64
		burst          int
		count, packets uint64
		duration, min  time.Duration
	}{
		{100, 64, 20, 20, time.Minute, 200 * time.Millisecond},           // one burst, cut to the count
		{1000, 64, 64, 64, time.Minute, 64 * time.Millisecond},           // one whole burst
		{100, 1, 10, 10, time.Minute, 100 * time.Millisecond},            // ten bursts of one
		{10, 100, 50, 3, 300 * time.Millisecond, 300 * time.Millisecond}, // the duration first: cut to what it allows
	} {
		a, _ := pair(t, memring.Config{RingSize: 1024})
		g, err := NewPktgen(a, PktgenConfig{Rate: tc.rate, Burst: tc.burst, Count: tc.count, Duration: tc.duration})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		r, err := g.Run(context.Background())
		el := time.Since(t0)
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.Packets != tc.packets || r.Seconds < tc.min.Seconds() || el < tc.min || r.PPS > tc.rate*1.01 {
			t.Errorf("-r %v -b %d -n %d -t %v: %d packets in %.3f s (%v wall) = %.0f pps; want %d in %v or more, at most the rate",
				tc.rate, tc.burst, tc.count, tc.duration, r.Packets, r.Seconds, el, r.PPS, tc.packets, tc.min)
		}
	}
}

// srcDev is a memring device posing as a SrcXmitter whose datagrams all
// came to dstAddr: XmitFrom records the source it was given and sends
// as Xmit.
type srcDev struct {
	*memring.Device
	dstAddr netip.Addr
	froms   []netip.Addr
}

func (d *srcDev) XmitTo(b *skb.Buff, dst netip.AddrPort, more bool) error { return d.Xmit(b, more) }
func (d *srcDev) Src() netip.AddrPort                                     { return netip.MustParseAddrPort("127.0.0.1:9") }
func (d *srcDev) PktInfo() bool                                           { return true }
func (d *srcDev) DstAddr() netip.Addr                                     { return d.dstAddr }
func (d *srcDev) XmitFrom(b *skb.Buff, src netip.Addr, dst netip.AddrPort, more bool) error {
	d.froms = append(d.froms, src)
	return d.Xmit(b, more)
}

// TestEchoSrcXmitter checks that Echo answers from the request's
// destination on a SrcXmitter, and from the route's address (the zero Addr)
// when that destination is a multicast group, which cannot be a source.
func TestEchoSrcXmitter(t *testing.T) {
	for _, tc := range []struct{ dst, want string }{{"127.0.0.2", "127.0.0.2"}, {"ff02::1", ""}, {"239.1.2.3", ""}} {
		a, b := pair(t, memring.Config{})
		d := &srcDev{Device: b, dstAddr: netip.MustParseAddr(tc.dst)}
		ctx, cancel := context.WithCancel(context.Background())
		srv := make(chan EchoResult)
		go func() {
			r, _ := Echo(ctx, d, EchoConfig{})
			srv <- r
		}()
		r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 5, Warmup: -1})
		cancel()
		sr := <-srv
		if err != nil || r.Iters != 5 || sr.Echoed != 5 || len(d.froms) != 5 {
			t.Fatalf("%s: pingpong %+v, %v; echo %+v; %d XmitFrom", tc.dst, r, err, sr, len(d.froms))
		}
		for _, f := range d.froms {
			if (tc.want == "" && f.IsValid()) || (tc.want != "" && f != netip.MustParseAddr(tc.want)) {
				t.Errorf("request to %s answered from %v, want %q", tc.dst, f, tc.want)
			}
		}
	}
}

// TestPktgenNoTimestamp runs the generator with NoTimestamp beside a sink:
// every stamp carries its sequence number and no send time, so the sink
// counts every packet, loses and reorders none, and times none. A run
// bounded by its duration still ends near it, reading the clock every
// clockEvery packets; with a Rate it keeps to it.
func TestPktgenNoTimestamp(t *testing.T) {
	a, b := pair(t, memring.Config{RingSize: 4096})
	const n = 3000 // fewer than the ring holds: none dropped if the sink runs late
	s, _ := NewSink(b, SinkConfig{Count: n, Duration: 10 * time.Second})
	done := runSink(t, s)
	g, err := NewPktgen(a, PktgenConfig{Count: n, Flows: 2, NoTimestamp: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sr := <-done
	if sr.Packets != n || sr.Lost != 0 || sr.Reordered != 0 || sr.Duplicates != 0 || sr.Unstamped != 0 || sr.Latency.Count != 0 {
		t.Errorf("sink result %+v: want %d packets, none lost, reordered, unstamped or timed", sr, n)
	}

	// The stamps themselves, as Burst writes them.
	c, d := pair(t, memring.Config{RingSize: 64})
	g2, err := NewPktgen(c, PktgenConfig{Burst: 4, NoTimestamp: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if _, err := g2.Burst(); err != nil {
		t.Fatal(err)
	}
	got := 0
	if _, err := d.Poll(64, func(p *skb.Buff) {
		st, ok := ParseStamp(p.Data())
		if !ok || st.Tstamp != 0 || st.Seq != uint64(got) {
			t.Errorf("stamp %+v (ok %v): want seq %d and no send time", st, ok, got)
		}
		got++
		d.Cache().Free(p)
	}); err != nil || got != 4 {
		t.Fatalf("Poll: %d, %v", got, err)
	}

	for _, tc := range []struct {
		name  string
		cfg   PktgenConfig
		stall bool          // sends take 20 ms each from 50 ms into the run on
		ctx   time.Duration // ctx's timeout, when set
		want  time.Duration // how long the run should take
	}{
		{"duration", PktgenConfig{Duration: 100 * time.Millisecond, NoTimestamp: true}, false, 0, 100 * time.Millisecond},
		{"rate", PktgenConfig{Duration: 200 * time.Millisecond, Rate: 1000, NoTimestamp: true}, false, 0, 200 * time.Millisecond},
		{"stall/duration", PktgenConfig{Duration: 150 * time.Millisecond, NoTimestamp: true}, true, 0, 150 * time.Millisecond},
		{"stall/ctx", PktgenConfig{Duration: 10 * time.Second, NoTimestamp: true}, true, 150 * time.Millisecond, 150 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, memring.Config{RingSize: 1024})
			stop := make(chan struct{})
			drained := make(chan struct{})
			go func() { // drain the ring, so that sends never stop
				defer close(drained)
				for {
					select {
					case <-stop:
						return
					default:
					}
					b.Poll(64, func(p *skb.Buff) { b.Cache().Free(p) })
				}
			}()
			defer func() { close(stop); <-drained }()
			var dev netdev.Device = a
			start := time.Now()
			if tc.stall {
				// A device that starts to block in the middle of the
				// packets sent between two reads of the clock.
				dev = stallDev{a, start.Add(50 * time.Millisecond)}
			}
			g, err := NewPktgen(dev, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			r, err := g.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el < tc.want || el > tc.want+200*time.Millisecond {
				t.Errorf("a run that should take %v took %v", tc.want, el)
			}
			if tc.cfg.Rate > 0 {
				if max := uint64(tc.cfg.Rate*tc.cfg.Duration.Seconds()) + 1; r.Packets > max {
					t.Errorf("%d packets in %v at %v/s: want at most %d", r.Packets, tc.cfg.Duration, tc.cfg.Rate, max)
				}
			}
		})
	}
}

// stallDev is a device whose Xmit takes 20 ms from a moment on.
type stallDev struct {
	*memring.Device
	from time.Time
}

func (d stallDev) Xmit(b *skb.Buff, more bool) error {
	if time.Now().After(d.from) {
		time.Sleep(20 * time.Millisecond)
	}
	return d.Device.Xmit(b, more)
}

// emptyPollDev is a memring device that counts the Polls that handed
// nothing over.
type emptyPollDev struct {
	*memring.Device
	empty int
}

func (d *emptyPollDev) Poll(budget int, h netdev.Handler) (int, error) {
	n, err := d.Device.Poll(budget, h)
	if n == 0 {
		d.empty++
	}
	return n, err
}

// TestPingPongWaitFirst checks that without busy polling neither end
// makes a Poll that finds nothing on each round trip: after its request
// (the client) or its answer (Echo) each waits first, and Wait returns
// at once when a packet is ready.
func TestPingPongWaitFirst(t *testing.T) {
	const iters = 300
	a, b := pair(t, memring.Config{})
	cli, srv := &emptyPollDev{Device: a}, &emptyPollDev{Device: b}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan EchoResult)
	go func() {
		r, _ := Echo(ctx, srv, EchoConfig{})
		done <- r
	}()
	r, err := PingPong(context.Background(), cli, PingPongConfig{Iters: iters, Warmup: -1})
	cancel()
	sr := <-done
	if err != nil || r.Iters != iters || sr.Echoed != iters {
		t.Fatalf("%+v, %v; echo %+v", r, err, sr)
	}
	// Only a Wait that timed out (20 ms slices) is followed by a Poll
	// that finds nothing: a few at most, also for Echo's last wait.
	if cli.empty > 5 || srv.empty > 5 {
		t.Errorf("empty Polls over %d round trips: client %d, echo %d", iters, cli.empty, srv.empty)
	}
}

// TestPktgenSlowRateStops checks that a run paced far below one packet per
// interval still calls OnInterval every interval and ends soon after ctx
// does, without sending the packet the rate would let out next.
func TestPktgenSlowRateStops(t *testing.T) {
	a, _ := pair(t, memring.Config{})
	ticks := 0
	g, err := NewPktgen(a, PktgenConfig{Rate: 0.25, Duration: time.Minute, Interval: 50 * time.Millisecond,
		OnInterval: func(PktgenInterval) { ticks++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := g.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Run returned %v after its ctx ended at 300ms", el)
	}
	if r.Packets != 1 {
		t.Errorf("sent %d packets at 0.25/s in 300ms, want 1", r.Packets)
	}
	if ticks < 3 {
		t.Errorf("%d interval calls in 300ms at 50ms each, want at least 3", ticks)
	}
}

// failingDev is a memring device whose sends fail from its from-th packet
// on: with errs, Xmit frees the packet and returns an error; without, it
// drops the packet silently and counts it in tx_dropped_kernel, as an
// AF_XDP queue to a link without carrier does.
type failingDev struct {
	*memring.Device
	from, n, dropped int
	errs             bool
}

var errGone = errors.New("interface gone")

func (d *failingDev) Xmit(b *skb.Buff, more bool) error {
	if d.n++; d.n <= d.from {
		return d.Device.Xmit(b, more)
	}
	b.Free()
	if d.errs {
		d.dropped++
		return errGone
	}
	d.dropped++
	return nil
}

func (d *failingDev) Stats() netdev.Stats {
	st := d.Device.Stats()
	r := netdev.DropError
	if !d.errs {
		r = netdev.DropKernel
	}
	st.TxDropped[r] += uint64(d.dropped)
	return st
}

// TestPktgenFailing checks that a run whose sends all fail ends with
// ErrFailing, at its start or after packets went out, whether the device
// returns errors (the error wraps the first) or drops the packets
// silently (the error names the drop counter, read every failCheck), at
// once when nothing went out and after failStall when some did; and that
// a run whose packets go out does not end so.
func TestPktgenFailing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		from  int
		errs  bool
		count uint64
		want  string // a regular expression
	}{
		{"errors from the start", 0, true, 20000, `^traffic: every send fails: 64 sends failed, none went out: interface gone$`},
		{"errors after 1000", 1000, true, 0, `^traffic: every send fails: the last \d+ sends failed, none went out since packet 1000: interface gone$`},
		{"silent drops after 1000", 1000, false, 0, `^traffic: every send fails: the last (\d+) sends failed, none went out since packet 1000: the device dropped them \(tx_dropped_kernel (\d+)\)$`},
		{"none", 1 << 30, true, 20000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, memring.Config{})
			d := &failingDev{Device: a, from: tc.from, errs: tc.errs}
			stop, done := make(chan struct{}), make(chan struct{})
			go func() { // drain the other end
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := b.Poll(64, func(x *skb.Buff) { x.Free() }); err != nil {
						return
					}
					b.Wait(time.Millisecond)
				}
			}()
			g, err := NewPktgen(d, PktgenConfig{Size: 64, Count: tc.count, Burst: 1, Duration: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			start := time.Now()
			r, err := g.Run(context.Background())
			close(stop)
			<-done
			if tc.want == "" {
				if err != nil || r.Packets != tc.count {
					t.Fatalf("a run whose packets go out: %d sent, %v", r.Packets, err)
				}
				return
			}
			if !errors.Is(err, ErrFailing) || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("Run: %v, want %q", err, tc.want)
			}
			if tc.errs && !errors.Is(err, errGone) {
				t.Errorf("Run's error %v does not wrap the transmit error", err)
			}
			if r.Packets != uint64(tc.from) {
				t.Errorf("%d packets sent, want %d", r.Packets, tc.from)
			}
			// At once when nothing went out; after failStall when some did.
			limit := time.Second
			if tc.from > 0 {
				limit = failStall + time.Second
			}
			if el := time.Since(start); el > limit {
				t.Errorf("the failing run ended after %v", el)
			}
		})
	}
}

// TestPktgenWarm checks the warm-up before the clock: one burst's buffers of
// the largest size scheduled (no more than the count; one per Clone
// packets), allocated, written and all freed, nothing sent.
func TestPktgenWarm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     PktgenConfig
		n, size int
	}{
		{"burst 16", PktgenConfig{Burst: 16, Size: 300}, 16, 300},
		{"imix", PktgenConfig{Burst: 8, IMIX: []IMIXEntry{{Size: 60, Weight: 7}, {Size: 1400, Weight: 1}}}, 8, 1400},
		{"count", PktgenConfig{Burst: 64, Size: 100, Count: 5}, 5, 100},
		{"clone", PktgenConfig{Burst: 8, Size: 100, Clone: 4}, 2, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := pair(t, memring.Config{})
			g, err := NewPktgen(a, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			p := a.Cache().Pool()
			st0 := p.Stats()
			if !g.warm(nil) {
				t.Fatal("warm reported a stop without done")
			}
			st := p.Stats()
			allocs, frees := st.Headers.Allocs-st0.Headers.Allocs, st.Headers.Frees-st0.Headers.Frees
			if allocs != uint64(tc.n) || frees != allocs || st.InFlight() != st0.InFlight() || a.Stats().TxPackets != 0 {
				t.Errorf("warm: %d buffers allocated, %d freed, in flight %d -> %d, %d sent; want %d allocated and freed, none sent",
					allocs, frees, st0.InFlight(), st.InFlight(), a.Stats().TxPackets, tc.n)
			}
			var big uint64
			for i, c := range st.Classes {
				if c.Size >= tc.size {
					big += c.Allocs - st0.Classes[i].Allocs
				}
			}
			if big != uint64(tc.n) {
				t.Errorf("warm: %d of its buffers from a class of at least %d bytes, want %d", big, tc.size, tc.n)
			}
		})
	}
}

// TestBusyPollOneP runs the busy-polling ping-pong and echo, and a spinning
// sink behind a generator, in one process on one P (GOMAXPROCS 1, as
// under taskset -c 0): each spinning loop must yield the P after an empty
// Poll, or its peer runs only when the scheduler preempts it (about 10 ms
// a turn: a few hundred round trips in the 10 s allowed here, not 2000).
func TestBusyPollOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a, b := pair(t, memring.Config{})
	stop := echoOn(t, b, EchoConfig{Spin: true})
	// 10 s: ample on a loaded machine, and half what 2000 round trips
	// take when a spin keeps the P until preempted (10 ms each).
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 2000, Warmup: -1, BusyPoll: true, Size: 100, Duration: 10 * time.Second})
	stop()
	if err != nil || r.Iters != 2000 {
		t.Fatalf("%d of 2000 round trips in 10 s (%v) with one P", r.Iters, err)
	}

	// A spinning sink, fed one packet at a time by a sender that yields
	// after each.
	tx, rx := pair(t, memring.Config{})
	sink := make(chan SinkResult)
	go func() {
		s, err := NewSink(rx, SinkConfig{Spin: true, Duration: 10 * time.Second, Count: 5000})
		if err != nil {
			t.Error(err)
			sink <- SinkResult{}
			return
		}
		r, err := s.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		sink <- r
	}()
	c := tx.Cache()
	for range 5000 {
		b, err := c.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		b.Put(64)
		if err := tx.Xmit(b, false); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
	if sr := <-sink; sr.Packets != 5000 {
		t.Errorf("sink counted %d of 5000 packets in 2 s with one P", sr.Packets)
	}
}

// busyDev is a device that busy-polls itself (netdev.BusyPoller) by
// polling in a loop, counting its BusyPoll calls and noting the longest
// timeout asked for.
type busyDev struct {
	netdev.Device
	calls   atomic.Int64
	longest atomic.Int64 // ns
	bad     atomic.Int64 // timeouts of 0 or less: a loop must not spin unbounded
}

func (d *busyDev) BusyPoll(budget int, h netdev.Handler, timeout time.Duration) (int, error) {
	d.calls.Add(1)
	if timeout <= 0 {
		d.bad.Add(1)
	}
	if int64(timeout) > d.longest.Load() {
		d.longest.Store(int64(timeout))
	}
	deadline := time.Now().Add(timeout)
	for {
		n, err := d.Poll(budget, h)
		if n > 0 || err != nil || !time.Now().Before(deadline) {
			return n, err
		}
	}
}

// TestBusyPollerUsed runs the busy-polling ping-pong and echo over devices
// that busy-poll themselves: both spin in the device's BusyPoll, each call
// bounded by busySlice, and the run completes, on two Ps and on one (where
// the loops yield the P after each BusyPoll that found nothing).
func TestBusyPollerUsed(t *testing.T) {
	for _, procs := range []int{2, 1} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			ma, mb := pair(t, memring.Config{})
			a, b := &busyDev{Device: ma}, &busyDev{Device: mb}
			stop := echoOn(t, b, EchoConfig{Spin: true})
			// Few round trips, in a long bound: with both Ps spinning
			// and other tests' threads beside them, a round trip waits
			// for the OS to run the peer (milliseconds).
			const iters = 200
			r, err := PingPong(context.Background(), a, PingPongConfig{Iters: iters, Warmup: -1, BusyPoll: true, Size: 100, Duration: 30 * time.Second})
			sr := stop()
			if err != nil || r.Iters != iters || sr.Echoed != iters {
				t.Fatalf("%d of %d round trips, %d echoed (%v)", r.Iters, iters, sr.Echoed, err)
			}
			for _, d := range []struct {
				name string
				dev  *busyDev
			}{{"client", a}, {"server", b}} {
				if c := d.dev.calls.Load(); c < iters {
					t.Errorf("%s: %d BusyPoll calls for %d round trips; want its receive to spin in BusyPoll", d.name, c, iters)
				}
				if l, want := time.Duration(d.dev.longest.Load()), spinSlice(procs == 1); l > want {
					t.Errorf("%s: a BusyPoll of %v; want each bounded by %v with GOMAXPROCS %d", d.name, l, want, procs)
				}
				if n := d.dev.bad.Load(); n > 0 {
					t.Errorf("%s: %d BusyPolls with a timeout of 0 or less", d.name, n)
				}
			}
		})
	}
}

// TestBusyPollerSink runs a spinning sink alone on a device that
// busy-polls itself: it receives in BusyPoll, each call bounded by
// busySlice, and counts every packet sent.
func TestBusyPollerSink(t *testing.T) {
	tx, mrx := pair(t, memring.Config{})
	rx := &busyDev{Device: mrx}
	s, err := NewSink(rx, SinkConfig{Spin: true, Duration: 5 * time.Second, Count: 500})
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan SinkResult)
	go func() {
		r, err := s.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		res <- r
	}()
	c := tx.Cache()
	for i := range 500 {
		b, err := c.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		PutStamp(b.Put(64), Stamp{Run: 1, Seq: uint64(i)})
		if err := tx.Xmit(b, false); err != nil {
			t.Fatal(err)
		}
		if i%8 == 7 {
			time.Sleep(100 * time.Microsecond) // let the sink spin on an empty ring now and then
		}
	}
	r := <-res
	if r.Packets != 500 || r.Lost != 0 {
		t.Errorf("sink: %d packets, %d lost; want 500, 0", r.Packets, r.Lost)
	}
	if c := rx.calls.Load(); c == 0 {
		t.Errorf("sink: no BusyPoll calls; want a spinning sink alone to receive in BusyPoll")
	}
	if l := time.Duration(rx.longest.Load()); l > busySlice || rx.bad.Load() > 0 {
		t.Errorf("sink: a BusyPoll of %v (%d of 0 or less); want each bounded by busySlice (%v)", l, rx.bad.Load(), busySlice)
	}
}

// TestPingPongWarmupLossNotCounted loses a request of the warm-up (its
// reply comes late) and one measured request (its reply never comes):
// Lost and Late count the measured one only, so Iters + Lost is the
// requests measured.
func TestPingPongWarmupLossNotCounted(t *testing.T) {
	a, b := pair(t, memring.Config{})
	stop := answer(b, func(n int, x *skb.Buff) bool {
		switch n {
		case 2: // the warm-up's second request: late
			time.Sleep(300 * time.Millisecond)
		case 6: // the third measured request: no reply
			x.Free()
			return false
		}
		return true
	})
	r, err := PingPong(context.Background(), a, PingPongConfig{Iters: 6, Warmup: 3, Timeout: 200 * time.Millisecond})
	stop()
	if err != nil || r.Iters != 5 || r.Lost != 1 || r.Late != 0 {
		t.Errorf("%+v, %v; want 5 round trips, 1 lost (the measured one), 0 late (the late reply was the warm-up's)", r, err)
	}
}
