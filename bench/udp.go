package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/skbdev/skb/driver/udp"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/traffic"
)

// Socket buffer sizes of the loopback runs: those the C references set
// (SO_SNDBUFFORCE and SO_RCVBUFFORCE of 4 MiB).
const (
	sockBuf = 4 << 20
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

// The ping-pong servers bind the wildcard address, as the C reference's
// does (INADDR_ANY): a socket with its source address (or its device)
// pinned costs each reply a route lookup of its own, about 0.1-0.2 µs of
// a 6 µs round trip here, for C as for Go. They answer sources in
// loopbackNet only (traffic.EchoConfig.From), so that nothing from the
// network is answered.
var (
	wildcard    = netip.MustParseAddrPort("0.0.0.0:0")
	loopbackNet = netip.MustParsePrefix("127.0.0.0/8")
)

// udpFlow is one pktgen -> sink run over UDP loopback.
type udpFlow struct {
	size      int
	burst     int
	gso, gro  bool
	copybreak int // the receiver's netdev.Config.Copybreak
	// txPool, when set, is the sender's pool (the headroom experiment).
	txPool *pool.Pool
	// wrap, when set, puts a step in front of the sender: it returns the
	// device to send with and a function adding its figures to the sample.
	wrap func(d *udp.Device) (netdev.Device, func(sample))
	// held notes the pool memory each received buffer holds.
	held bool
	// spin makes the sink poll again at once when it finds nothing,
	// instead of sleeping in the device's Wait (a sleeping receiver is
	// woken by the sender's CPU, once per datagram when it keeps up).
	spin bool
	// sleep makes the sink sleep this long when it has drained the queue
	// while traffic flows, as skb sink does by default, instead of
	// waiting in Wait to be woken.
	sleep time.Duration
	// noTimestamp leaves the send time out of the stamps
	// (PktgenConfig.NoTimestamp): the sender reads the clock once per 64
	// datagrams rather than for each, and the sink records no latency, as
	// C's udp_send and udp_recv do neither (the c-udp rows).
	noTimestamp bool
}

// runUDP runs f once and returns its figures.
func runUDP(ctx context.Context, e *env, f udpFlow) (sample, error) {
	p, err := e.sharedPool()
	if err != nil {
		return nil, err
	}
	txPool := f.txPool
	if txPool == nil {
		txPool = p
	}
	rx, err := udp.Open(udp.Config{
		Config: netdev.Config{Pool: p, Copybreak: f.copybreak},
		Local:  loopback, GRO: f.gro, RcvBuf: sockBuf, NoSrc: true,
		KeepP: keepP(), // the sink waits on a thread of its own (datapath)
	})
	if err != nil {
		return nil, err
	}
	defer rx.Close()
	// The sender binds the wildcard, as C's udp_send leaves its socket
	// unbound: one bound to 127.0.0.1 has the kernel look its source
	// address up for every unconnected datagram (__ip_dev_find in the
	// route lookup), which cost burst 64 about 5% (ten ABBA rounds).
	tx, err := udp.Open(udp.Config{
		Config: netdev.Config{Pool: txPool, Batch: max(f.burst, netdev.DefaultBatch), Copybreak: netdev.CopybreakOff},
		Local:  wildcard, GSO: f.gso, SndBuf: sockBuf,
	})
	if err != nil {
		return nil, err
	}
	defer tx.Close()
	if f.gso && !tx.GSO() {
		return nil, fmt.Errorf("UDP GSO: %w", errors.ErrUnsupported)
	}
	if f.gro && !rx.GRO() {
		return nil, fmt.Errorf("UDP GRO: %w", errors.ErrUnsupported)
	}
	var txDev netdev.Device = tx
	var extra func(sample)
	if f.wrap != nil {
		txDev, extra = f.wrap(tx)
	}
	var rxDev netdev.Device = rx
	var meter *heldMeter
	if f.held {
		meter = newHeldMeter(rx)
		rxDev = meter
	}
	r, err := runFlow(ctx, e, flowSpec{
		tx: txDev, rx: rxDev,
		gen:     traffic.PktgenConfig{Dst: rx.LocalAddr(), Size: f.size, Burst: f.burst, GSO: f.gso, NoTimestamp: f.noTimestamp},
		sink:    traffic.SinkConfig{Spin: f.spin, Sleep: f.sleep},
		rxCount: func() uint64 { return rx.Stats().RxPackets },
	})
	if err != nil {
		return nil, err
	}
	s := r.sample()
	if meter != nil {
		s["held B/pkt"] = meter.perPacket()
	}
	if extra != nil {
		extra(s)
	}
	return s, nil
}

// keepP says whether the bench's udp receivers keep their P while they
// wait (udp.Config.KeepP): the sender and the receiver of a pair run in
// this one process, each on a thread of its own, and a receiver that
// sleeps keeping the only P would leave the sender none until the runtime
// preempts it, 10-20 ms later.
func keepP() bool { return runtime.GOMAXPROCS(0) >= 2 }

// udpVariant returns a variant running f.
func udpVariant(name, ref string, f udpFlow) variant {
	return variant{name: name, ref: ref, run: func(ctx context.Context, e *env) (sample, error) {
		return runUDP(ctx, e, f)
	}}
}

// cloneWrap sends a clone of every buffer and frees the original (seed 000
// off).
func cloneWrap(d *udp.Device) (netdev.Device, func(sample)) {
	return &xmitWrap{AddrXmitter: d, pre: cloneOnXmit(d.Cache())}, nil
}

// heapWrap allocates every transmit buffer's data with make([]byte).
func heapWrap(d *udp.Device) (netdev.Device, func(sample)) {
	h := newHeapAlloc(skbHeadroom)
	return &xmitWrap{AddrXmitter: d, alloc: h.Alloc}, nil
}

// encapWrap pushes an EncapLen-byte outer header on every packet.
func encapWrap(d *udp.Device) (netdev.Device, func(sample)) {
	enc := newEncapsulator(d.Cache())
	return &xmitWrap{AddrXmitter: d, pre: enc.step}, func(s sample) {
		if enc.packets > 0 {
			s["reallocs/pkt"] = float64(enc.reallocs) / float64(enc.packets)
		}
	}
}

// headroomPool returns a pool whose buffers have headroom bytes of headroom
// (0: none).
func headroomPool(headroom int) (*pool.Pool, error) {
	hr := headroom
	if hr == 0 {
		hr = pool.NoHeadroom
	}
	return pool.New(pool.Config{Headroom: hr, Name: fmt.Sprintf("bench headroom %d", headroom)})
}

// headroomVariant runs burst-64 loopback with the encapsulation step and a
// sender pool of the given headroom.
func headroomVariant(name, ref string, headroom int) variant {
	return variant{name: name, ref: ref, run: func(ctx context.Context, e *env) (sample, error) {
		p, err := headroomPool(headroom)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		return runUDP(ctx, e, udpFlow{size: 64, burst: 64, txPool: p, wrap: encapWrap})
	}}
}

// pingUDP runs one ping-pong over UDP loopback: Echo on the receiver CPU,
// PingPong on the sender CPU, iters round trips of size bytes, bounded by
// 4 times the run duration and a second.
func pingUDP(ctx context.Context, e *env, size, iters int, busy, clone bool) (sample, error) {
	p, err := e.sharedPool()
	if err != nil {
		return nil, err
	}
	recvSize := max(size, 1)
	// Both ends wait on threads of their own (datapath): KeepP.
	srv, err := udp.Open(udp.Config{Config: netdev.Config{Pool: p}, Local: wildcard, RecvSize: recvSize, KeepP: keepP()})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	dst := netip.AddrPortFrom(loopback.Addr(), srv.LocalAddr().Port())
	cli, err := udp.Open(udp.Config{Config: netdev.Config{Pool: p}, Local: loopback, Remote: dst, RecvSize: recvSize, KeepP: keepP()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	var srvDev, cliDev netdev.Device = srv, cli
	if clone {
		srvDev, _ = cloneWrap(srv)
		cliDev, _ = cloneWrap(cli)
	}
	return runPing(ctx, e, srvDev, cliDev, "ping-pong", traffic.PingPongConfig{
		Size: size, Iters: iters, Duration: 4*e.dur + time.Second, BusyPoll: busy,
	}, loopbackNet)
}

// runPing runs a ping-pong between two devices: Echo on srv, pinned to the
// receiver CPU and bounded by 4 times the run duration and 10 seconds, and
// PingPong with pc on cli, pinned to the sender CPU, each on a thread with
// a private descriptor table as the skb tool runs them (datapath); Echo spins when
// pc.BusyPoll, answers sources in from only (any when from is invalid) and
// stops once PingPong returns. what names the ping-pong in the error when
// no round trip completed.
func runPing(ctx context.Context, e *env, srv, cli netdev.Device, what string, pc traffic.PingPongConfig, from netip.Prefix) (sample, error) {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	started := make(chan struct{})
	var echoErr error
	srvDone := datapath(e.receiver, func() {
		close(started)
		// Budget 1, as the client: one request is in flight, and the udp
		// driver then probes for one datagram instead of asking for a batch.
		_, echoErr = traffic.Echo(sctx, srv, traffic.EchoConfig{Spin: pc.BusyPoll, Idle: -1, Duration: 4*e.dur + 10*time.Second, Budget: 1, From: from})
	})
	<-started
	var res traffic.PingPongResult
	var pingErr error
	<-datapath(e.sender, func() { res, pingErr = traffic.PingPong(ctx, cli, pc) })
	stop()
	<-srvDone
	if err := firstErr(pingErr, echoErr); err != nil {
		return nil, err
	}
	if res.Iters == 0 {
		return nil, errNoPackets(what)
	}
	return pingSample(res), nil
}

// pingSample returns a ping-pong's figures.
func pingSample(r traffic.PingPongResult) sample {
	return sample{
		"usec/iter": r.UsecPerIter,
		"Mbit/s":    r.Mbps,
		"p50":       float64(r.P50) / 1e3,
		"p99":       float64(r.P99) / 1e3,
		"mean":      float64(r.Mean) / 1e3,
	}
}

// pingIters returns the round trips a ping-pong makes in about d at about
// rtt each.
func pingIters(d, rtt time.Duration) int {
	return max(1000, int(d/rtt))
}

// udpConnRun sends with a plain net.UDPConn loop (WriteToUDP) on the sender
// CPU for e.dur to a plain net.UDPConn loop (ReadFromUDP) on the receiver
// CPU: the Go program skb's UDP path is measured against.
func udpConnRun(ctx context.Context, e *env, size int) (sample, error) {
	rc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(loopback))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	_ = rc.SetReadBuffer(sockBuf)
	// On the wildcard, as skb's sender in runUDP.
	sc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(wildcard))
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	_ = sc.SetWriteBuffer(sockBuf)
	dst := rc.LocalAddr().(*net.UDPAddr)

	started, txStarted := make(chan struct{}), make(chan struct{})
	var rxPkts uint64
	var first, last time.Time
	var stopRx = make(chan struct{})
	rxDone := pinned(e.receiver, func() {
		close(started)
		buf := make([]byte, 2048)
		<-txStarted
		for {
			select {
			case <-stopRx:
				return
			default:
			}
			_ = rc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			for {
				n, _, err := rc.ReadFromUDP(buf)
				if err != nil {
					break
				}
				_ = n
				rxPkts++
				last = time.Now()
				if rxPkts == 1 {
					first = last
				}
				if rxPkts&1023 == 0 {
					_ = rc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				}
			}
		}
	})
	<-started
	var txPkts uint64
	var txErr error
	var txSecs float64
	txCPU := <-pinned(e.sender, func() {
		close(txStarted)
		buf := make([]byte, size)
		start := time.Now()
		deadline := start.Add(e.dur)
		for i := uint64(0); ; i++ {
			if i&63 == 0 && (!time.Now().Before(deadline) || ctx.Err() != nil) {
				break
			}
			if _, err := sc.WriteToUDP(buf, dst); err != nil {
				if txErr == nil {
					txErr = err
				}
				continue
			}
			txPkts++
		}
		txSecs = time.Since(start).Seconds()
	})
	// Let the receiver drain its socket.
	time.Sleep(60 * time.Millisecond)
	close(stopRx)
	rxCPU := <-rxDone
	if txPkts == 0 {
		if txErr != nil {
			return nil, txErr
		}
		return nil, errNoPackets("net.UDPConn")
	}
	s := sample{"tx pps": float64(txPkts) / txSecs, "tx cpu": float64(txCPU.Nanoseconds()) / float64(txPkts)}
	if rxPkts > 1 && last.After(first) {
		s["rx pps"] = float64(rxPkts) / last.Sub(first).Seconds()
		s["rx cpu"] = float64(rxCPU.Nanoseconds()) / float64(rxPkts)
	}
	return s, nil
}
