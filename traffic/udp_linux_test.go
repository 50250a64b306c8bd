package traffic

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/driver/udp"
	"github.com/skbdev/skb/internal/icmptest"
	"github.com/skbdev/skb/netdev"
)

var lo4 = netip.MustParseAddrPort("127.0.0.1:0")

func openUDP(t testing.TB, cfg udp.Config) *udp.Device {
	t.Helper()
	d, err := udp.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d
}

// sinkAsync runs a sink on its own goroutine (the device's) and returns
// a channel with its result.
func sinkAsync(t testing.TB, devs []netdev.Device, cfg SinkConfig) <-chan SinkResult {
	ch := make(chan SinkResult, 1)
	go func() {
		r, err := RunSinks(context.Background(), devs, cfg)
		if err != nil {
			t.Error(err)
		}
		ch <- r
	}()
	return ch
}

// TestUDPLoopback sends from a generator to a sink over loopback at a
// modest rate and expects every datagram, in order.
func TestUDPLoopback(t *testing.T) {
	tests := []struct {
		name  string
		gen   PktgenConfig
		gso   bool
		gro   bool
		want  uint64
		bells uint64
		// thread runs the sink with SinkConfig.Thread and the generator
		// in netdev.RunOnThread: threads with private descriptor tables.
		thread bool
	}{
		{"burst 1", PktgenConfig{Count: 4000, Rate: 40000}, false, false, 4000, 4000, false},
		{"burst 16", PktgenConfig{Count: 4000, Rate: 40000, Burst: 16}, false, false, 4000, 250, false},
		{"gso gro", PktgenConfig{Count: 6400, Rate: 100000, Burst: 64, GSO: true}, true, true, 6400, 100, false},
		{"gso plain sink", PktgenConfig{Count: 3200, Rate: 40000, Burst: 32, GSO: true, Size: 200}, true, false, 3200, 100, false},
		{"clone", PktgenConfig{Count: 2000, Rate: 40000, Burst: 4, Clone: 10}, false, false, 2000, 500, false},
		{"burst 16 on threads", PktgenConfig{Count: 4000, Rate: 40000, Burst: 16}, false, false, 4000, 250, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rx := openUDP(t, udp.Config{Local: lo4, GRO: tc.gro, RcvBuf: 4 << 20})
			tx := openUDP(t, udp.Config{Local: lo4, GSO: tc.gso})
			res := sinkAsync(t, []netdev.Device{rx}, SinkConfig{Count: tc.want, Duration: 10 * time.Second, Thread: tc.thread})
			tc.gen.Dst = rx.LocalAddr()
			g, err := NewPktgen(tx, tc.gen)
			if err != nil {
				t.Fatal(err)
			}
			var gr PktgenResult
			run := func() { gr, err = g.Run(context.Background()) }
			if tc.thread {
				if _, terr := netdev.RunOnThread(-1, run); terr != nil {
					t.Fatal(terr)
				}
			} else {
				run()
			}
			if err != nil {
				t.Fatal(err)
			}
			sr := <-res
			if gr.Packets != tc.want || gr.Errors != 0 || gr.Doorbells != tc.bells {
				t.Errorf("pktgen %+v: want %d packets in %d doorbells", gr, tc.want, tc.bells)
			}
			dups := uint64(0)
			if c := tc.gen.Clone; c > 1 {
				dups = tc.want - tc.want/uint64(c)
			}
			if sr.Packets != tc.want || sr.Lost != 0 || sr.Reordered != 0 || sr.Duplicates != dups || sr.KernelDrops != 0 {
				t.Errorf("sink %+v: want %d packets, %d duplicates", sr, tc.want, dups)
			}
		})
	}
}

// TestUDPFlows sends 4 flows to 4 ports and receives them with one sink per
// port.
func TestUDPFlows(t *testing.T) {
	const flows = 4
	var devs []netdev.Device
	var base netip.AddrPort
	for try := 0; try < 20 && len(devs) < flows; try++ {
		devs = devs[:0]
		first, err := udp.Open(udp.Config{Local: lo4, RcvBuf: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		base = first.LocalAddr()
		devs = append(devs, first)
		for i := 1; i < flows; i++ {
			d, err := udp.Open(udp.Config{Local: netip.AddrPortFrom(base.Addr(), base.Port()+uint16(i)), RcvBuf: 1 << 20})
			if err != nil {
				break
			}
			devs = append(devs, d)
		}
		if len(devs) < flows {
			for _, d := range devs {
				d.Close()
			}
		}
	}
	if len(devs) < flows {
		t.Skip("no 4 consecutive free ports on loopback")
	}
	t.Cleanup(func() {
		for _, d := range devs {
			d.Close()
		}
	})
	var ivs int
	res := make(chan SinkResult, 1)
	go func() {
		r, err := RunSinks(context.Background(), devs, SinkConfig{Count: 4000, Interval: 20 * time.Millisecond,
			OnInterval: func(SinkInterval) { ivs++ }})
		if err != nil {
			t.Error(err)
		}
		res <- r
	}()
	tx := openUDP(t, udp.Config{Local: lo4})
	g, err := NewPktgen(tx, PktgenConfig{Dst: base, Flows: flows, Count: 4000, Rate: 40000, Burst: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.Packets != 4000 || r.Flows != flows || r.Lost != 0 || r.Reordered != 0 {
		t.Errorf("sinks %+v: want 4000 packets in %d flows", r, flows)
	}
	if ivs == 0 {
		t.Error("no merged interval")
	}
}

func TestUDPPingPong(t *testing.T) {
	for _, busy := range []bool{false, true} {
		srv := openUDP(t, udp.Config{Local: lo4})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan EchoResult, 1)
		go func() {
			r, err := Echo(ctx, srv, EchoConfig{Spin: busy})
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		// Connected, as cmd/skb opens it: an absent server shows as ECONNREFUSED.
		cli := openUDP(t, udp.Config{Remote: srv.LocalAddr()})
		r, err := PingPong(context.Background(), cli, PingPongConfig{Iters: 500, BusyPoll: busy})
		cancel()
		er := <-done
		if err != nil {
			t.Fatal(err)
		}
		if r.Iters != 500 || r.Lost != 0 || r.P50 <= 0 || er.Echoed != 550 {
			t.Errorf("busy %v: pingpong %+v, echo %+v", busy, r, er)
		}
		// Unconnected, addressed with XmitTo.
		cli2 := openUDP(t, udp.Config{Local: lo4})
		ctx, cancel = context.WithCancel(context.Background())
		go func() {
			r, _ := Echo(ctx, srv, EchoConfig{Spin: busy})
			done <- r
		}()
		r, err = PingPong(context.Background(), cli2, PingPongConfig{Dst: srv.LocalAddr(), Iters: 100, Warmup: -1, BusyPoll: busy})
		cancel()
		<-done
		if err != nil || r.Iters != 100 {
			t.Errorf("busy %v, unconnected: %+v, %v", busy, r, err)
		}
	}
}

// TestUDPEchoFrom checks that an echo server with From answers sources
// inside it only, and counts the others in Other.
func TestUDPEchoFrom(t *testing.T) {
	for _, tc := range []struct {
		listen string
		from   string
		answer bool
	}{
		{"0.0.0.0:0", "127.0.0.0/8", true},
		{"0.0.0.0:0", "198.18.0.0/15", false},
		{"0.0.0.0:0", "::1/128", false},
		// Dual-stack: an IPv4 source is matched as IPv4, also by a mapped prefix.
		{"[::]:0", "127.0.0.0/8", true},
		{"[::]:0", "::ffff:127.0.0.0/104", true},
		{"[::]:0", "::ffff:198.18.0.0/111", false},
	} {
		srv := openUDP(t, udp.Config{Local: netip.MustParseAddrPort(tc.listen)})
		r, er, err := echoRound(t, srv, EchoConfig{From: netip.MustParsePrefix(tc.from), Idle: -1}, "127.0.0.1", tc.answer)
		if tc.answer {
			if err != nil || r.Iters != 20 || er.Echoed != 20 || er.Other != 0 {
				t.Errorf("%s, From %s: pingpong %+v, %v; echo %+v: want 20 answered", tc.listen, tc.from, r, err, er)
			}
		} else if r.Iters != 0 || er.Echoed != 0 || er.Other == 0 {
			t.Errorf("%s, From %s: pingpong %+v, %v; echo %+v: want none answered, all in Other", tc.listen, tc.from, r, err, er)
		}
	}
	// A device that does not report sources cannot filter by them.
	a, _ := pair(t, memring.Config{})
	if _, err := Echo(context.Background(), a, EchoConfig{From: netip.MustParsePrefix("127.0.0.0/8")}); !errors.Is(err, ErrConfig) {
		t.Errorf("From on memring: %v, want ErrConfig", err)
	}
}

// TestUDPEchoPktInfo runs Echo on devices bound to 0.0.0.0 and :: with
// PktInfo, for clients connected to 127.0.0.2 (and ::1), which drop an
// answer from any other address: Echo answers from the request's
// destination (SrcXmitter). Without PktInfo the 127.0.0.2 client gets none.
func TestUDPEchoPktInfo(t *testing.T) {
	for _, tc := range []struct {
		listen  string
		pktinfo bool
		client  string
	}{
		{"0.0.0.0:0", true, "127.0.0.2"},
		{"[::]:0", true, "127.0.0.2"},
		{"[::]:0", true, "::1"},
		{"0.0.0.0:0", false, "127.0.0.2"},
	} {
		srv := openUDP(t, udp.Config{Local: netip.MustParseAddrPort(tc.listen), PktInfo: tc.pktinfo})
		r, er, err := echoRound(t, srv, EchoConfig{Idle: -1}, tc.client, tc.pktinfo)
		if tc.pktinfo && (err != nil || r.Iters != 20 || er.Echoed != 20) {
			t.Errorf("%s with PktInfo, client to %s: pingpong %+v, %v; echo %+v: want 20 answered", tc.listen, tc.client, r, err, er)
		}
		if !tc.pktinfo && (r.Iters != 0 || !errors.Is(err, ErrNoReply)) {
			t.Errorf("%s without PktInfo, client to %s: pingpong %+v, %v: want no reply", tc.listen, tc.client, r, err)
		}
	}
}

// TestUDPEchoSelf checks that Echo does not answer a datagram from its own
// socket (sent here by the server's device to its own address, as a forged
// one would come), which would come back to be answered again without end:
// it counts it in Other, and a client's requests are still answered.
func TestUDPEchoSelf(t *testing.T) {
	for _, tc := range []struct {
		listen  string
		pktinfo bool
		to      string
	}{
		{"127.0.0.1:0", false, "127.0.0.1"},
		{"0.0.0.0:0", false, "127.0.0.1"},
		{"0.0.0.0:0", true, "127.0.0.2"},
		{"[::]:0", false, "::1"},
	} {
		srv := openUDP(t, udp.Config{Local: netip.MustParseAddrPort(tc.listen), PktInfo: tc.pktinfo})
		b, err := srv.Cache().Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		PutStamp(b.Put(64), Stamp{Run: 1, Seq: 1})
		if err := srv.XmitTo(b, netip.AddrPortFrom(netip.MustParseAddr(tc.to), srv.LocalAddr().Port()), false); err != nil {
			t.Fatal(err)
		}
		r, er, err := echoRound(t, srv, EchoConfig{Idle: -1}, tc.to, true)
		if err != nil || r.Iters != 20 || er.Echoed != 20 || er.Other != 1 {
			t.Errorf("%s (PktInfo %v), its own datagram to %s first: pingpong %+v, %v; echo %+v: want 20 answered, 1 in Other",
				tc.listen, tc.pktinfo, tc.to, r, err, er)
		}
	}
}

// echoRound runs Echo on srv with cfg and 20 round trips of a client
// connected to host at srv's port, and returns the client's result, the
// echo's result and the client's error. A reply can take long on a loaded
// machine under -race: the client waits 2 s for one when answer says it
// should come; an unanswered request waits out 50 ms once and ends the run.
func echoRound(t *testing.T, srv *udp.Device, cfg EchoConfig, host string, answer bool) (PingPongResult, EchoResult, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan EchoResult, 1)
	go func() {
		r, err := Echo(ctx, srv, cfg)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	cli := openUDP(t, udp.Config{Remote: netip.AddrPortFrom(netip.MustParseAddr(host), srv.LocalAddr().Port())})
	timeout := 50 * time.Millisecond
	if answer {
		timeout = 2 * time.Second
	}
	r, err := PingPong(context.Background(), cli, PingPongConfig{Iters: 20, Warmup: -1, Timeout: timeout})
	cancel()
	return r, <-done, err
}

// TestUDPPingPongRefused checks that a client connected to a port without a
// server fails at once with the socket's error.
func TestUDPPingPongRefused(t *testing.T) {
	icmptest.OnEachCPU(t, func() error {
		free, err := udp.Open(udp.Config{Local: lo4})
		if err != nil {
			t.Fatal(err)
		}
		addr := free.LocalAddr()
		free.Close()
		cli := openUDP(t, udp.Config{Remote: addr})
		t0 := time.Now()
		_, err = PingPong(context.Background(), cli, PingPongConfig{Iters: 10})
		if err == nil {
			return errors.New("pingpong to a closed port succeeded")
		}
		if el := time.Since(t0); el > 900*time.Millisecond {
			return fmt.Errorf("took %v to notice: %v", el, err)
		}
		return nil
	})
}

// TestUDPZeroAllocs asserts zero allocations per burst over the UDP
// driver, generator and sink in one goroutine.
func TestUDPZeroAllocs(t *testing.T) {
	rx := openUDP(t, udp.Config{Local: lo4, RcvBuf: 4 << 20})
	tx := openUDP(t, udp.Config{Local: lo4})
	g, err := NewPktgen(tx, PktgenConfig{Dst: rx.LocalAddr(), Burst: 16, Flows: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSink(rx, SinkConfig{})
	step := func() {
		if _, err := g.Burst(); err != nil {
			t.Fatal(err)
		}
		pollAll(t, s)
	}
	for range 50 {
		step()
	}
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Errorf("%v allocations per burst, want 0", n)
	}
}

// TestUDPLargestDatagram sends the largest UDP payload of each family over
// loopback, with the generator and the ping-pong client: 65507 bytes over
// IPv4 and 65527 over IPv6, whose payload length holds no IP header. A
// byte more is a config error.
func TestUDPLargestDatagram(t *testing.T) {
	for _, tc := range []struct {
		addr string
		max  int
	}{
		{"127.0.0.1:0", MaxDatagram},
		{"[::1]:0", MaxDatagram6},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			local := netip.MustParseAddrPort(tc.addr)
			if local.Addr().Is6() {
				d, err := udp.Open(udp.Config{Local: local})
				if err != nil {
					t.Skipf("no IPv6 loopback: %v", err)
				}
				d.Close()
			}
			rx := openUDP(t, udp.Config{Local: local, RecvSize: udp.MaxDatagram6, RcvBuf: 4 << 20})
			tx := openUDP(t, udp.Config{Local: local})
			if _, err := NewPktgen(tx, PktgenConfig{Dst: rx.LocalAddr(), Size: tc.max + 1}); !errors.Is(err, ErrConfig) {
				t.Errorf("size %d: %v, want ErrConfig", tc.max+1, err)
			}
			g, err := NewPktgen(tx, PktgenConfig{Dst: rx.LocalAddr(), Size: tc.max, Count: 20, Rate: 2000})
			if err != nil {
				t.Fatal(err)
			}
			ch := sinkAsync(t, []netdev.Device{rx}, SinkConfig{Count: 20, Duration: 5 * time.Second})
			gr, err := g.Run(context.Background())
			g.Close()
			sr := <-ch
			if err != nil || gr.Packets != 20 || gr.Errors != 0 || sr.Packets != 20 || sr.Bytes != uint64(20*tc.max) {
				t.Errorf("pktgen %+v, %v; sink %+v", gr, err, sr)
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				Echo(ctx, rx, EchoConfig{})
				close(done)
			}()
			cli := openUDP(t, udp.Config{Local: local, RecvSize: udp.MaxDatagram6})
			_, err = PingPong(context.Background(), cli, PingPongConfig{Dst: rx.LocalAddr(), Size: tc.max + 1})
			if !errors.Is(err, ErrConfig) {
				t.Errorf("pingpong size %d: %v, want ErrConfig", tc.max+1, err)
			}
			r, err := PingPong(context.Background(), cli, PingPongConfig{Dst: rx.LocalAddr(), Size: tc.max, Iters: 5, Warmup: -1})
			cancel()
			<-done
			if err != nil || r.Iters != 5 || r.Lost != 0 {
				t.Errorf("pingpong: %+v, %v", r, err)
			}
		})
	}
}
