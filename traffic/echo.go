package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// EchoConfig configures an echo server, the other end of PingPong. The
// zero value answers every datagram, sleeping in the device's Wait between
// empty polls, and stops after DefaultSinkDuration or DefaultEchoIdle
// without a request once one came.
type EchoConfig struct {
	// Budget is the most packets one Poll hands over; 0 means 1: each
	// answer then rings its doorbell at once, from the handler, rather
	// than after the Poll (measured busy-polling on loopback, skb pingpong
	// processes: p50 6.51-6.57 µs against 6.81-6.85 µs with 64, the C
	// reference 6.42-6.45 µs; blocking, 17.15-17.24 against 17.19-17.29
	// µs). A larger budget shares one doorbell among the answers of a
	// Poll, for many requests in flight at once.
	Budget int

	// Spin polls again at once after an empty Poll instead of sleeping in
	// the device's Wait (busy polling); a device that busy-polls itself
	// (netdev.BusyPoller: the UDP driver) spins in its BusyPoll instead,
	// 50 µs at a time (on the process's one P, one round of probes,
	// after which it yields the P), as PingPongConfig.BusyPoll does.
	Spin bool

	// Duration bounds the run (0 means DefaultSinkDuration); Idle stops it
	// after this long without a request once one came (0 means
	// DefaultEchoIdle, negative never), a request being one the server
	// answers: the frames it counts in Other do not start it; Count stops
	// it after this many answers (0: no limit).
	Duration time.Duration
	Idle     time.Duration
	Count    uint64

	// Link says the device hands over Ethernet frames: only UDP frames to
	// Port (any when 0) and to Addr (any when invalid) are answered, with
	// Ethernet and IP addresses and ports swapped; other frames are freed
	// and counted in Other.
	Link bool
	Port uint16
	Addr netip.Addr

	// From, when valid, limits the answers on a device that reports each
	// datagram's source (an AddrXmitter: driver/udp) to sources inside
	// it (an IPv4 source on a dual-stack socket is matched as IPv4, and an
	// IPv4-mapped prefix such as ::ffff:127.0.0.0/104 as its IPv4 one); other
	// datagrams are freed unanswered and counted in Other. A server bound
	// to the wildcard address then answers only, say, 127.0.0.0/8: the
	// kernel's cheapest reply path (no source address or device pinned on
	// the socket, both of which cost each reply its own route lookup)
	// without answering the network.
	From netip.Prefix

	// OnInterval, when set, is called on the server's goroutine every
	// Interval (0 means DefaultInterval), and once more at the end of the
	// run for what was echoed since (or a part interval long enough to
	// show), so that the intervals' Echoed add up to the result's.
	OnInterval func(EchoInterval)
	Interval   time.Duration
}

// EchoInterval is what one interval of an echo run answered.
type EchoInterval struct {
	Elapsed time.Duration
	Seconds float64
	Echoed  uint64
	PPS     float64
}

// EchoResult is what an echo run did.
type EchoResult struct {
	Echoed  uint64  // packets answered
	Bytes   uint64  // their UDP payload bytes (on a link-layer device too)
	Seconds float64 // from the first request to the last
	// Other counts what was not answered: frames not for the server
	// (link-layer mode), datagrams from outside From, and datagrams from
	// the server's own address and port (see Echo).
	Other uint64
	// Errors counts answers the device refused; FirstErr is the first.
	Errors   uint64
	FirstErr error
}

type echoer struct {
	dev   netdev.Device
	bp    netdev.BusyPoller // dev, when Spin is set and dev busy-polls itself
	yield bool              // spinning on the process's one P (soleP): yield it now and then (yieldEvery)
	cache *pool.Cache
	ax    AddrXmitter
	sx    SrcXmitter     // ax with PktInfo on: answers from the request's destination
	local netip.AddrPort // ax's bound address, when it reports one (LocalAddr)
	// hostAddrs are this host's addresses (in the network namespace of the
	// thread Echo runs on) when local's address is unspecified: a datagram
	// from one of them at local's port is from the server. They are read
	// at the start and again, at most every hostAddrsEvery, when a
	// datagram comes from local's port and an address not among them (one
	// added since).
	hostAddrs   []netip.Addr
	hostAddrsAt time.Time
	cfg         EchoConfig
	res         EchoResult
	stop        bool
	handler     netdev.Handler
	frame       header.Frame // the request being answered, parsed in place
	// mac is a link-layer device's address, when it reports one (macOK);
	// csumStates, whether it sets checksum states (ChecksumStater).
	mac        header.MAC
	macOK      bool
	csumStates bool
}

// Echo answers every request dev receives by sending the very buffer back
// (Xmit takes it: no copy, no clone, seed 000): to its source with XmitTo on
// an AddrXmitter (from the address the request came to, with XmitFrom, on a
// SrcXmitter whose PktInfo is on, unless that is a multicast group), with
// Xmit on another datagram device, and as a frame with its addresses
// swapped and its UDP checksum recomputed on a link-layer one (unless the
// device marked it CHECKSUM_PARTIAL, which its Xmit completes).
// A datagram from the server's own address and port (a forged one, one
// the device sent itself, or on a wildcard bind one from another socket
// of this host sharing the port with SO_REUSEPORT) is not answered but
// counted in Other: its answer could come back to be answered again,
// without end. On a link-layer device a frame is answered only when it is
// to the device's MAC, untagged, from one station to one (not from or to
// a broadcast or multicast address, nor from an unspecified or loopback
// address or port 0: the answer's addresses are the request's, swapped),
// its IPv6 extension headers are ones the host would deliver (the rules
// of the kernel's ip6_parse_tlv and ipv6_rthdr_rcv with their defaults:
// see ipv6OptionsOK), and its checksums hold
// (see badSum); the others count in Other.
// The answers of one Poll share one doorbell (with a Budget of 1, each
// answer rings its own at once). It runs on dev's goroutine until its
// bounds or ctx end it, and returns an error wrapping ErrConfig for an
// invalid config, or the device's error (netdev.ErrClosed when it was
// closed under the run), with the result so far.
func Echo(ctx context.Context, dev netdev.Device, cfg EchoConfig) (EchoResult, error) {
	e := &echoer{dev: dev, bp: busyPoller(dev, cfg.Spin), cache: dev.Cache(), cfg: cfg, yield: cfg.Spin && soleP()}
	cfg.Budget = cmp0(cfg.Budget, 1)
	cfg.Duration = cmp0(cfg.Duration, DefaultSinkDuration)
	cfg.Idle = cmp0(cfg.Idle, DefaultEchoIdle)
	cfg.Interval = cmp0(cfg.Interval, DefaultInterval)
	if cfg.Budget < 1 || cfg.Duration < 0 || cfg.Interval < 0 {
		return EchoResult{}, fmt.Errorf("traffic: echo: %w: budget %d, duration %v, interval %v", ErrConfig, cfg.Budget, cfg.Duration, cfg.Interval)
	}
	if a := cfg.From.Addr(); a.Is4In6() && cfg.From.Bits() >= 96 {
		// Sources are matched as IPv4 (AddrXmitter's Src unmaps them).
		cfg.From = netip.PrefixFrom(a.Unmap(), cfg.From.Bits()-96)
	}
	cfg.Addr = cfg.Addr.Unmap()
	e.cfg = cfg
	if !cfg.Link {
		e.ax, _ = dev.(AddrXmitter)
		if sx, ok := dev.(SrcXmitter); ok && sx.PktInfo() {
			e.sx = sx
		}
		if l, ok := dev.(interface{ LocalAddr() netip.AddrPort }); ok {
			a := l.LocalAddr()
			e.local = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
			if e.local.Addr().IsUnspecified() {
				e.hostAddrs, e.hostAddrsAt = hostAddrs(), time.Now()
			}
		}
	}
	if cfg.From.IsValid() && e.ax == nil {
		return EchoResult{}, fmt.Errorf("traffic: echo: %w: From %v needs a device that reports each datagram's source (driver/udp), not a link-layer one", ErrConfig, cfg.From)
	}
	if cfg.Link {
		e.mac, e.macOK = deviceMAC(dev)
		if c, ok := dev.(ChecksumStater); ok {
			e.csumStates = c.ChecksumStates()
		}
	}
	e.handler = e.handle
	r, err := e.loop(ctx)
	if err != nil {
		err = fmt.Errorf("traffic: echo: %w", err)
	}
	return r, err
}

func (e *echoer) handle(b *skb.Buff) {
	if e.stop {
		e.cache.Free(b)
		return
	}
	n := b.Len()
	// The answers of one Poll share one doorbell, rung by the Flush after
	// it; with a budget of 1 the answer is alone, and its doorbell rings
	// at once (more false), which spares the reply the way back out of
	// Poll into Flush.
	more := e.cfg.Budget > 1
	var err error
	switch {
	case e.cfg.Link:
		var ok bool
		if n, ok = e.reflect(b); !ok {
			e.res.Other++
			e.cache.Free(b)
			return
		}
		err = e.dev.Xmit(b, more)
	case e.ax != nil:
		src := e.ax.Src()
		if e.cfg.From.IsValid() && !e.cfg.From.Contains(src.Addr()) || e.fromSelf(src) {
			e.res.Other++
			e.cache.Free(b)
			return
		}
		if e.sx != nil {
			from := e.sx.DstAddr()
			if from.IsMulticast() {
				// A request to a group: answer from the route's
				// address, as without PktInfo.
				from = netip.Addr{}
			}
			err = e.sx.XmitFrom(b, from, src, more)
		} else {
			err = e.ax.XmitTo(b, src, more)
		}
	default:
		err = e.dev.Xmit(b, more)
	}
	e.count(n, err)
}

// fromSelf reports whether a datagram from src came from the server's
// own socket: its port, and its bound address, or with the socket bound
// to the unspecified address a loopback address, an address of this host
// (read again when a datagram from the server's port comes from an address
// not known), or the address the datagram came to (PktInfo). Answering
// such a datagram (forged, or the device's own) would send it back to the
// server, which would answer it again, without end. Datagrams between two servers
// can still loop, as between any two echo services (RFC 862): the run's
// bounds end it.
func (e *echoer) fromSelf(src netip.AddrPort) bool {
	if src.Port() != e.local.Port() || !e.local.IsValid() {
		return false
	}
	a := src.Addr()
	if l := e.local.Addr(); !l.IsUnspecified() {
		return a == l
	}
	if a.IsLoopback() || slices.Contains(e.hostAddrs, a) || e.sx != nil && a == e.sx.DstAddr().Unmap() {
		return true
	}
	if time.Since(e.hostAddrsAt) < hostAddrsEvery {
		return false
	}
	// From the server's port and an address not known to be this host's:
	// one added since the list was read, or another host's.
	e.hostAddrs, e.hostAddrsAt = hostAddrs(), time.Now()
	return slices.Contains(e.hostAddrs, a)
}

// hostAddrsEvery is how often, at most, Echo reads the host's addresses
// again (fromSelf): a loop through an address added after the start ends
// within it.
const hostAddrsEvery = 100 * time.Millisecond

// hostAddrs returns the addresses of this host's interfaces, unmapped, or
// none when they cannot be read.
func hostAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

func (e *echoer) count(n int, err error) {
	if err != nil {
		e.res.Errors++
		if e.res.FirstErr == nil {
			e.res.FirstErr = err
		}
		if errors.Is(err, netdev.ErrClosed) {
			e.stop = true
		}
		return
	}
	e.res.Echoed++
	e.res.Bytes += uint64(n)
	if e.cfg.Count > 0 && e.res.Echoed >= e.cfg.Count {
		e.stop = true
	}
}

// reflect turns the frame in b into its answer and returns its UDP payload
// length, reporting false for a frame not to be answered.
func (e *echoer) reflect(b *skb.Buff) (int, bool) {
	if b.IsNonlinear() {
		if err := b.Linearize(e.cache); err != nil {
			return 0, false
		}
	}
	data := b.Data()
	f := &e.frame
	if err := header.ParseFrameInto(data, f); err != nil || f.PayloadOffset == 0 || f.Protocol != header.IPProtoUDP || f.Fragment {
		return 0, false
	}
	u := header.UDP(data[f.TransportOffset:])
	if e.cfg.Port != 0 && u.DestinationPort() != e.cfg.Port {
		return 0, false
	}
	plen := max(0, min(int(u.Length())-header.UDPHeaderLen, len(data)-f.PayloadOffset))
	if e.cfg.Addr.IsValid() && frameDst(data, f) != e.cfg.Addr {
		return 0, false
	}
	if !toHost(data, f, e.mac, e.macOK, false) || !answerable(data, f) || !ipv6OptionsOK(data, f) || e.badSum(b, data, f) {
		return 0, false
	}
	if b.Cloned() {
		if err := b.Unshare(e.cache); err != nil {
			return 0, false
		}
		data = b.Data()
	}
	reflectUDP(data, f)
	if b.IPSummed() != skb.ChecksumPartial {
		// A frame the sender's kernel left CHECKSUM_PARTIAL (a veth with
		// transmit checksumming) holds only the pseudo-header sum, and a
		// device without checksum state (AF_XDP) cannot say so: compute
		// the checksum, so that the answer is valid whatever came in. A
		// device that marks the frame partial (AF_PACKET) completes it
		// itself at Xmit.
		fillUDPChecksum(data, f)
	}
	return plen, true
}

// badSum reports whether the request b (its data, parsed as f) fails its
// checksums, so that a corrupt request is not answered with a checksum
// made valid. On a device that sets checksum states (ChecksumStater) a
// CHECKSUM_NONE frame's are verified; on one that does not (AF_XDP) a UDP
// checksum that is only the pseudo-header's sum passes too, since a frame
// the sender's kernel left CHECKSUM_PARTIAL (a veth with transmit
// checksumming) holds that.
func (e *echoer) badSum(b *skb.Buff, data []byte, f *header.Frame) bool {
	if e.csumStates {
		return badChecksum(b, f, true)
	}
	if f.VerifyChecksumBuff(b) == nil {
		return false
	}
	if f.EtherType == header.EtherTypeIPv4 && !header.IPv4(data[f.NetworkOffset:]).ChecksumValid() {
		return true
	}
	c, p := header.UDP(data[f.TransportOffset:]).Checksum(), udpPseudo(data, f)
	return c != p && c != ^p
}

func (e *echoer) loop(ctx context.Context) (EchoResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	done := ctx.Done()
	clk := newClock()
	deadline := e.cfg.Duration
	var first, last, lastTick time.Duration
	seen := false
	lastEchoed := uint64(0)
	// tick reports the interval from lastTick to now.
	tick := func(now time.Duration) {
		iv := EchoInterval{Elapsed: now, Seconds: (now - lastTick).Seconds(), Echoed: e.res.Echoed - lastEchoed}
		iv.PPS, _ = rates(iv.Echoed, 0, iv.Seconds)
		lastTick, lastEchoed = now, e.res.Echoed
		e.cfg.OnInterval(iv)
	}
	var runErr error
	var now time.Duration
	spins := 0
loop:
	for !e.stop {
		before := e.res.Echoed + e.res.Errors
		var n int
		var err error
		if e.bp != nil {
			n, err = e.bp.BusyPoll(e.cfg.Budget, e.handler, spinSlice(e.yield))
		} else {
			n, err = e.dev.Poll(e.cfg.Budget, e.handler)
		}
		if e.cfg.Budget > 1 && e.res.Echoed+e.res.Errors > before {
			// (With a budget of 1 each answer rang its own doorbell.)
			if ferr := e.dev.Flush(); ferr != nil {
				e.count(0, ferr)
			}
		}
		if err != nil {
			runErr = err
			break
		}
		if n == 0 && e.cfg.Spin {
			if e.yield && (e.bp != nil || (spins+1)%yieldEvery == 0) {
				runtime.Gosched()
			}
			// Spinning on an empty queue: look at the clock (and the
			// bounds, the interval and ctx) every 64th time only, so that
			// a spin costs little more than the device's probe; after
			// every BusyPoll, which spun its slice.
			if spins++; e.bp == nil && spins&63 != 0 {
				continue
			}
		}
		now = clk.now()
		if e.res.Echoed+e.res.Errors > before {
			// Requests answered, not the packets counted in Other (a
			// link-layer server's ARP, neighbour discovery, another
			// port's; datagrams From or the server's own address turn
			// away), end the wait for the first and start the idle time
			// over.
			if !seen {
				seen, first = true, now
			}
			last = now
		}
		switch {
		case now >= deadline:
			break loop
		case seen && e.cfg.Idle > 0 && now-last >= e.cfg.Idle:
			break loop
		}
		if e.cfg.OnInterval != nil && now-lastTick >= e.cfg.Interval {
			tick(now)
		}
		if done != nil {
			select {
			case <-done:
				break loop
			default:
			}
		}
		if !e.cfg.Spin {
			// Wait after every Poll, not only one that found nothing: it
			// returns at once when a packet is ready, and after an answer
			// (with one request in flight) it saves the Poll that would
			// find the queue empty, a system call a round trip.
			if err := e.dev.Wait(min(waitSlice, deadline-now)); err != nil && !errors.Is(err, netdev.ErrTimeout) {
				runErr = err
				break
			}
		}
	}
	if end := clk.now(); e.cfg.OnInterval != nil && end > lastTick && (e.res.Echoed != lastEchoed || end-lastTick >= finalInterval) {
		// The run's last part interval, as pktgen's and the sink's: the
		// intervals' Echoed add up to the result's.
		tick(end)
	}
	if seen {
		e.res.Seconds = (last - first).Seconds()
	}
	if runErr == nil && e.res.FirstErr != nil && errors.Is(e.res.FirstErr, netdev.ErrClosed) {
		runErr = e.res.FirstErr
	}
	return e.res, runErr
}
