package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skbdev/skb/driver/afxdp"
	"github.com/skbdev/skb/driver/udp"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/traffic"
)

func init() { rootCmd.AddCommand(pingpongCmd()) }

type pingpongOpts struct {
	server   bool
	listen   string
	connect  string
	size     int
	iters    int
	warmup   int
	busy     bool
	duration time.Duration
	idle     time.Duration
	timeout  time.Duration
	count    uint64
	budget   int
	from     string
	pktinfo  bool
}

func pingpongCmd() *cobra.Command {
	var f devFlags
	var o pingpongOpts
	cmd := &cobra.Command{
		Use:   "pingpong --server [--listen ADDR:PORT] | --connect ADDR:PORT [-s N] [-n N] [--busy-poll] [--json]",
		Short: "Round-trip latency: one UDP packet in flight, echoed by a pingpong server",
		Long: `pingpong measures round trips of one packet in flight, as ibv_rc_pingpong does
over RDMA. The server (--server) sends every packet it receives back to its
sender, the very buffer, with no copy and no clone. The client (--connect)
sends -s bytes, waits for the echo, and repeats -n times after a warm-up of
n/10 (at most 1000) unmeasured round trips, then prints ibv_rc_pingpong's two
lines and the p50, p99 and p99.9 round trip times. While it runs the client
prints a line about every second, and one for the run's last part second:
the round trips in it, its time over them (usec/iter, as the result's) and
their p50.

Both sides default to 127.0.0.1:9100, the C reference pingpong's port. The
client sends, as pktgen does, only to loopback (127.0.0.0/8, ::1) and to
198.18.0.0/15 and 2001:2::/48 over a route without a gateway that is not
the default route (a lab), unless --allow-any-dst; the server answers only
those who sent to it, and never a datagram from its own address and port
(a forged one, or another socket's sharing the port: its answer could
come back to be answered again, without end; two servers made to answer
each other still do, as any two echo services would, until their runs
end). A server on a
wildcard address (0.0.0.0, ::) answers
from the address its route back picks, as a C server's sendto does: a
client connected to another of the host's addresses (127.0.0.2 rather than
127.0.0.1) drops that answer. Give such a server --pktinfo and it answers
each request from the address the request was sent to (IP_PKTINFO), at the
cost of a control message each way (about 0.5 us a round trip
busy-polling on loopback).

Over a link-layer device (--dev afpacket:IFNAME, afxdp:IFNAME) the server
answers, with the frame's addresses swapped, only what the host's own stack
would: a frame to the interface's MAC, without a VLAN tag, from one
station's unicast MAC and address (not 0.0.0.0, loopback, broadcast or
multicast, nor port 0) to a unicast address, whose checksums hold and
whose IPv6 options the host would take; the rest count as other frames. An answer the device refuses counts in errors, and
the first refusal's reason is printed on stderr ("first_error" in --json).

A measured request without a reply within --timeout (default 1s, from its
send to its reply's receipt) counts as lost (a warm-up request as
warmup_lost), also when its reply comes later (a
reply is waited for no longer than that, and one that comes later is in no
round trip): the result's last line says how many ("lost" in --json; "late"
those whose reply came later, each once however many copies came; "stray"
the packets received that were no awaited reply: copies, a late reply found
while a later request was awaited, replies cut short or grown on the way
("resized" of them), other programs', the peer's ICMP errors on a link-layer
device) and the run goes on,
exit status 0 as ping's with some replies; when its first 3 requests get
no reply, the client fails. The round trips are measured over the replies
that came.

--busy-poll spins on the device's poll instead of sleeping while waiting: no
wake-up on the reply's path, one core kept busy. Give it on both sides to
measure the spinning floor, each side on a CPU of its own (taskset): two
spinning sides on one CPU take turns at the scheduler's pace (a round
trip of hundreds of µs, where sleeping sides take tens). Over udp the
spin is the device's BusyPoll, probing the socket in an assembly loop of
non-blocking receives. Without it each side sleeps until the kernel
wakes it: over --dev afxdp in poll(2) on the socket, as over udp in the
socket's receive, so that a round trip costs the two wake-ups and no nap.

Over --dev afpacket:IFNAME a packet received waits in the TPACKET_V3 ring
until its block fills or the block's retire timeout passes (1 ms, the
kernel's smallest): AF_PACKET's ring adds up to a millisecond per receive,
with --busy-poll too, so a round trip over it reads about a millisecond.
Use udp or afxdp to measure latency.

Every run is bounded: the client by -n and --duration (default 5s, also
while it waits for a reply), the server by --duration (default 10s), --idle
(3s without a request once one came, as the C reference server) and
--count.

` + signalHelp,
		Example: `  skb pingpong --server &
  skb pingpong -n 20000
  taskset -c 1 skb pingpong --server --busy-poll &
  taskset -c 0 skb pingpong --busy-poll -n 20000 --json
  skb pingpong --dev memring -n 100000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.server {
				return runPingServer(cmd, &f, &o)
			}
			return runPingClient(cmd, &f, &o)
		},
	}
	def := fmt.Sprintf("127.0.0.1:%d", defaultPingPort)
	fs := cmd.Flags()
	fs.BoolVar(&o.server, "server", false, "be the server: echo every packet back to its sender")
	fs.StringVar(&o.listen, "listen", def, "server: ADDR:PORT to receive on (port 0: the kernel picks one, printed on stderr); afpacket and afxdp: an address of the interface, or 0.0.0.0 or :: for any, and port 0 for every port")
	fs.StringVar(&o.connect, "connect", def, "client: the server's ADDR:PORT")
	fs.IntVarP(&o.size, "size", "s", traffic.DefaultSize, fmt.Sprintf("client: UDP payload bytes per packet, at least %d (the stamp)", traffic.StampLen))
	fs.IntVarP(&o.iters, "iters", "n", traffic.DefaultIters, "client: measured round trips")
	fs.IntVar(&o.warmup, "warmup", 0, "client: unmeasured round trips first (0: n/10, at most 1000; -1: none)")
	fs.BoolVar(&o.busy, "busy-poll", false, "spin on the device's poll instead of sleeping while waiting")
	durationVarP(fs, &o.duration, "duration", "t", 0, "stop after this long (default 5s for the client, 10s for the server)")
	durationVarP(fs, &o.idle, "idle", "", traffic.DefaultEchoIdle, "server: stop after this long without a request, once one came")
	fs.IntVar(&o.budget, "budget", 0, "packets per poll; 0: 1, which sends each answer at once (the server's answers of one poll share a doorbell when more)")
	fs.Uint64Var(&o.count, "count", 0, "server: stop after answering N packets (0: no limit)")
	fs.BoolVar(&o.pktinfo, "pktinfo", false, "server over udp: answer each request from the address it was sent to (IP_PKTINFO), for a --listen on 0.0.0.0 or :: with clients of several of its addresses")
	fs.StringVar(&o.from, "from", "", "server over udp: answer only sources in this PREFIX (e.g. 127.0.0.0/8, with --listen 0.0.0.0:PORT); others are counted and not answered")
	durationVarP(fs, &o.timeout, "timeout", "", traffic.DefaultReplyTimeout, "client: how long to wait for each reply (the first requests take longest: give several times the p50 you expect)")
	addDevFlags(cmd, &f, ", memring (a simulated NIC in this process with an echo on its other end: the engine's own cost); afpacket's receive ring adds up to 1 ms per receive: measure latency over udp or afxdp")
	addSenderFlags(cmd, &f)
	return cmd
}

type pingpongIntervalJSON struct {
	Type        string  `json:"type"`
	Elapsed     float64 `json:"elapsed"`
	Iters       int     `json:"iters"`
	UsecPerIter float64 `json:"usec_per_iter"`
	P50         float64 `json:"p50_us"`
}

type pingpongResultJSON struct {
	Type        string  `json:"type"`
	Iters       int     `json:"iters"`
	Bytes       uint64  `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	Mbps        float64 `json:"mbps"`
	UsecPerIter float64 `json:"usec_per_iter"`
	P50         float64 `json:"p50_us"`
	P90         float64 `json:"p90_us"`
	P99         float64 `json:"p99_us"`
	P999        float64 `json:"p999_us"`
	Min         float64 `json:"min_us"`
	Mean        float64 `json:"mean_us"`
	Max         float64 `json:"max_us"`
	Lost        int     `json:"lost"`
	Late        int     `json:"late"`
	WarmupLost  int     `json:"warmup_lost"`
	WarmupLate  int     `json:"warmup_late"`
	Stray       uint64  `json:"stray"`
	Resized     uint64  `json:"resized"`
	Size        int     `json:"size"`
	BusyPoll    bool    `json:"busy_poll"`
	Dev         string  `json:"dev"`
	Connect     string  `json:"connect,omitempty"` // absent for --dev memring, which connects nowhere
	CPUUser     float64 `json:"cpu_user"`
	CPUSys      float64 `json:"cpu_sys"`
	// Error is the run's error (the same as the error line on stderr
	// says), absent when the run succeeded.
	Error string `json:"error,omitempty"`
	stopInfo
}

type echoIntervalJSON struct {
	Type    string  `json:"type"`
	Elapsed float64 `json:"elapsed"`
	Echoed  uint64  `json:"echoed"`
	PPS     float64 `json:"pps"`
}

type echoResultJSON struct {
	Type    string  `json:"type"`
	Echoed  uint64  `json:"echoed"`
	Bytes   uint64  `json:"bytes"`
	Seconds float64 `json:"seconds"`
	Errors  uint64  `json:"errors"`
	Other   uint64  `json:"other"`
	// KernelDrops counts the requests the kernel dropped before the
	// server received them (rx_dropped_kernel: the socket's receive
	// buffer full), as the sink's kernel_drops does.
	KernelDrops uint64 `json:"kernel_drops"`
	Dev         string `json:"dev"`
	Listen      string `json:"listen"`
	// FirstError is the first answer's refusal, when one was refused.
	FirstError string `json:"first_error,omitempty"`
	// CPUUser and CPUSys are the process's CPU time in seconds, as the
	// other commands' results give it (getrusage(2)).
	CPUUser float64 `json:"cpu_user"`
	CPUSys  float64 `json:"cpu_sys"`
	stopInfo
}

// The flags only one side of pingpong takes, besides --connect and
// --listen: the other side refuses them rather than ignore them.
var (
	pingClientFlags = []string{"size", "iters", "warmup", "timeout", "src", "dst-mac", "allow-any-dst"}
	pingServerFlags = []string{"idle", "count", "from", "pktinfo"}
)

func (o *pingpongOpts) check(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	if o.server {
		if changed("connect") {
			return errors.New("pingpong: --server takes --listen, not --connect")
		}
		if given := changedFlags(cmd, pingClientFlags); len(given) > 0 {
			return fmt.Errorf("pingpong: %s %s for the client (--connect), not the server (--server)", flagList(given, "and"), isAre(given))
		}
	} else {
		if changed("listen") {
			return errors.New("pingpong: --listen needs --server (the client takes --connect)")
		}
		if given := changedFlags(cmd, pingServerFlags); len(given) > 0 {
			return fmt.Errorf("pingpong: %s %s for the server (--server), not the client", flagList(given, "and"), isAre(given))
		}
	}
	switch {
	case o.iters < 1 || o.iters > traffic.MaxIters:
		return fmt.Errorf("pingpong: --iters %d: want 1 to %d", o.iters, traffic.MaxIters)
	case o.warmup < -1:
		return fmt.Errorf("pingpong: --warmup %d: want -1 (none), 0 (default) or more", o.warmup)
	case changed("duration") && o.duration <= 0:
		return fmt.Errorf("pingpong: --duration %v: want a positive duration (every run is bounded)", o.duration)
	case o.idle <= 0:
		return fmt.Errorf("pingpong: --idle %v: want a positive duration", o.idle)
	case o.budget < 0 || o.budget > 1<<16:
		return fmt.Errorf("pingpong: --budget %d: want 1 to 65536, or 0 for the default", o.budget)
	case o.timeout <= 0:
		return fmt.Errorf("pingpong: --timeout %v: want a positive duration", o.timeout)
	}
	return nil
}

func runPingServer(cmd *cobra.Command, f *devFlags, o *pingpongOpts) error {
	if err := o.check(cmd); err != nil {
		return err
	}
	// The signals are caught from here on: see startRun.
	sc := signalContext()
	defer func() { sc.stop() }()
	spec, listen, err := parseListen(f.dev, devKindsMemring, o.listen)
	if err != nil {
		return fmt.Errorf("pingpong: %w", err)
	}
	if spec.kind == devMemring {
		return errors.New("pingpong: --dev memring runs its own echo: give it to the client, without --server")
	}
	cfg := traffic.EchoConfig{Spin: o.busy, Duration: o.duration, Idle: o.idle, Count: o.count, Budget: o.budget}
	if o.pktinfo && spec.kind != devUDP {
		return fmt.Errorf("pingpong: --pktinfo is for --dev udp (on %v the server answers frames from the address they were sent to)", spec)
	}
	if o.pktinfo && !listen.Addr().IsUnspecified() {
		return fmt.Errorf("pingpong: --pktinfo is for a --listen on 0.0.0.0 or :: (a server on %v answers from it already)", listen.Addr())
	}
	if cmd.Flags().Changed("from") {
		pfx, err := netip.ParsePrefix(o.from)
		if err != nil {
			return fmt.Errorf("pingpong: --from %q: want a prefix such as 127.0.0.0/8", o.from)
		}
		if spec.kind != devUDP {
			return fmt.Errorf("pingpong: --from is for --dev udp (on %v the server answers frames to --listen's address)", spec)
		}
		a, l := pfx.Addr().Unmap(), listen.Addr()
		if a.Is4() && l.Is6() && !l.IsUnspecified() || a.Is6() && l.Is4() {
			return fmt.Errorf("pingpong: --from %v never matches a source on --listen %v", pfx, listen)
		}
		cfg.From = pfx.Masked()
	}
	var dev netdev.Device
	if spec.kind == devUDP {
		// KeepP: Echo waits on a thread of its own (onThread).
		d, err := udp.Open(udp.Config{Local: listen, RecvSize: recvSize(listen.Addr()), PktInfo: o.pktinfo, KeepP: true})
		if err != nil {
			return fmt.Errorf("pingpong: %w", bindErr("a pingpong server", "listen", listen, err))
		}
		dev = d
		if listen.Port() == 0 {
			listen = d.LocalAddr() // the result names the port the kernel picked
			fmt.Fprintf(os.Stderr, "skb: pingpong: listening on %v\n", listen)
		}
	} else {
		if err := checkLinkListen("a pingpong server", spec, listen, cmd.Flags().Changed("listen")); err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
		d, err := linkDev(spec, netdev.Config{}, false, pingWait(o.busy))
		if err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
		dev = d
		for _, w := range rxWarnings("pingpong", spec, d) {
			fmt.Fprintln(cmd.ErrOrStderr(), w)
		}
		defer holdPorts(listen, 1)()
		cfg.Link, cfg.Port = true, listen.Port()
		if !listen.Addr().IsUnspecified() {
			cfg.Addr = listen.Addr()
		}
	}
	defer dev.Close()
	p := newPrinter(cmd.OutOrStdout(), f.asJSON)
	cfg.OnInterval = func(iv traffic.EchoInterval) {
		p.line(fmt.Sprintf("%s echoed %d (%.0f pps)", secs(iv.Elapsed), iv.Echoed, iv.PPS),
			echoIntervalJSON{Type: "interval", Elapsed: iv.Elapsed.Seconds(), Echoed: iv.Echoed, PPS: iv.PPS})
	}
	if err := startRun(f, sc); err != nil {
		return fmt.Errorf("pingpong: %w", err)
	}
	var r traffic.EchoResult
	var runErr error
	st0 := dev.Stats()
	onThread(func() { r, runErr = traffic.Echo(sc, dev, cfg) })
	kdrops := dev.Stats().RxDropped[netdev.DropKernel] - st0.RxDropped[netdev.DropKernel]
	txt := fmt.Sprintf("echoed %d packets, %d bytes in %.2f seconds; %d errors, %d kernel drops", r.Echoed, r.Bytes, r.Seconds, r.Errors, kdrops)
	switch {
	case r.Other > 0 && spec.link():
		// Not requests: whatever else the link carries (on a fresh IPv6
		// link, the host's own neighbour discovery and multicast reports).
		txt += fmt.Sprintf("; %d other frames not answered", r.Other)
	case r.Other > 0:
		txt += fmt.Sprintf("; %d not answered (from outside --from, or from the server's own address and port)", r.Other)
	}
	if r.FirstErr != nil && !f.asJSON {
		// On stderr: the result line stays one line for scripts.
		fmt.Fprintf(cmd.ErrOrStderr(), "skb: pingpong: warning: %d %s refused, the first with: %v\n", r.Errors, plural(int(r.Errors), "answer was", "answers were"), r.FirstErr)
	}
	j := echoResultJSON{Type: "result", Echoed: r.Echoed, Bytes: r.Bytes, Seconds: r.Seconds, Errors: r.Errors, Other: r.Other,
		KernelDrops: kdrops, Dev: spec.String(), Listen: listen.String(), stopInfo: sc.stopped()}
	j.CPUUser, j.CPUSys = cpuTimes()
	if r.FirstErr != nil {
		j.FirstError = r.FirstErr.Error()
	}
	p.line(txt, j)
	if runErr != nil {
		return fmt.Errorf("pingpong: %w", runErr)
	}
	if err := p.err(); err != nil {
		return fmt.Errorf("pingpong: %w", err)
	}
	return sc.interrupted("pingpong")
}

func runPingClient(cmd *cobra.Command, f *devFlags, o *pingpongOpts) error {
	if err := o.check(cmd); err != nil {
		return err
	}
	// The signals are caught from here on: see startRun.
	sc := signalContext()
	defer func() { sc.stop() }()
	spec, dst, err := parseDevAddr(f.dev, devKindsMemring, "connect", o.connect)
	if err != nil {
		return fmt.Errorf("pingpong: %w", err)
	}
	switch {
	case !unicast(dst.Addr()):
		return fmt.Errorf("pingpong: --connect %v: want a unicast address", dst)
	case o.size < traffic.StampLen || o.size > maxPayload(dst.Addr()):
		return fmt.Errorf("pingpong: --size %d: want %d to %d bytes (%s)", o.size, traffic.StampLen, maxPayload(dst.Addr()), payloadLimit(dst.Addr()))
	}
	if spec.kind == devMemring {
		if err := checkMemringAddr(cmd, "connect"); err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
	}
	if f.dstMAC != "" && !spec.link() {
		return errors.New("pingpong: --dst-mac needs a link-layer device (afpacket or afxdp)")
	}
	if f.dstMAC != "" {
		if _, err := dstMAC(f); err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
	}
	if spec.link() && !cmd.Flags().Changed("connect") {
		// The default, 127.0.0.1, is not on any link.
		return fmt.Errorf("pingpong: --dev %v needs --connect (the server's address on the link)", spec)
	}
	cfg := traffic.PingPongConfig{Size: o.size, Iters: o.iters, Warmup: o.warmup, Duration: o.duration,
		Timeout: o.timeout, BusyPoll: o.busy, Budget: o.budget}
	var dev netdev.Device
	var closeDev closer
	// routePicks says a server on 0.0.0.0 or :: without --pktinfo may
	// answer from another address than dst's: this client's own address
	// (the one the route to dst picks) is not dst's.
	routePicks := false
	switch spec.kind {
	case devUDP:
		src, err := parseSrc(f.src)
		if err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
		if err := checkDst("connect", f, spec, src, dst); err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
		if sendsToSelf(src, dst, 1) {
			return fmt.Errorf("pingpong: --src %v and --connect %v are one socket: the client would send to itself and time its own requests", src, dst)
		}
		// Connected: a server that is not there shows at once as
		// ECONNREFUSED (the ICMP port unreachable), not as a timeout.
		// KeepP: PingPong waits on a thread of its own (onThread).
		d, err := udp.Open(udp.Config{Local: src, Remote: dst, RecvSize: recvSize(dst.Addr()), KeepP: true})
		if err != nil {
			if f.src != "" {
				err = bindErr("", "src", src, err)
			}
			return fmt.Errorf("pingpong: %w", err)
		}
		if w := fragmentWarning("pingpong", o.size, nil, src, dst); w != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), w)
		}
		dev, closeDev = d, d.Close
		routePicks = d.LocalAddr().Addr() != dst.Addr().Unmap()
	case devMemring:
		if err := checkMemringSize(fmt.Sprintf("--size %d", o.size), o.size); err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
		busy := o.busy
		dev, closeDev, err = memringPeer(func(ctx context.Context, peer netdev.Device) {
			traffic.Echo(ctx, peer, traffic.EchoConfig{Spin: busy, Idle: -1, Duration: 24 * time.Hour})
		})
		if err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
	default:
		frame, err := linkTarget("connect", spec, f, dst)
		if err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
		d, err := linkDev(spec, netdev.Config{}, false, pingWait(o.busy))
		if err != nil {
			return fmt.Errorf("pingpong: %w", err)
		}
		if err := checkFrameSize(fmt.Sprintf("--size %d", o.size), spec, d, o.size, dst.Addr().Is6()); err != nil {
			d.Close()
			return fmt.Errorf("pingpong: %w", err)
		}
		dev, closeDev, cfg.Frame = d, d.Close, frame
		if w := linkWarning("pingpong", spec, "goes out"); w != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), w)
		}
		// The replies reach this host's stack too: hold the source port,
		// or the kernel answers each with an ICMP port unreachable.
		defer holdPorts(netip.AddrPortFrom(frame.SourceIP, frame.SourcePort), 1)()
	}
	defer closeDev()
	p := newPrinter(cmd.OutOrStdout(), f.asJSON)
	cfg.OnInterval = func(iv traffic.PingPongInterval) {
		p.line(fmt.Sprintf("%s %d iters, %.2f usec/iter, p50 = %.2f usec", secs(iv.Elapsed), iv.Iters, iv.UsecPerIter, us(iv.P50)),
			pingpongIntervalJSON{Type: "interval", Elapsed: iv.Elapsed.Seconds(), Iters: iv.Iters, UsecPerIter: iv.UsecPerIter, P50: us(iv.P50)})
	}
	if err := startRun(f, sc); err != nil {
		return fmt.Errorf("pingpong: %w", err)
	}
	var r traffic.PingPongResult
	var runErr error
	onThread(func() { r, runErr = traffic.PingPong(sc, dev, cfg) })
	if r.Iters == 0 {
		var err error
		switch {
		case runErr == nil && sc.signal() == 0:
			err = noIters(o, r.Lost+r.WarmupLost)
		case runErr == nil:
		case errors.Is(runErr, syscall.ECONNREFUSED):
			err = fmt.Errorf("pingpong: %v refused the packets (ICMP port unreachable): is `skb pingpong --server` running there?", dst)
		case errors.Is(runErr, traffic.ErrNoReply):
			hint := ""
			if routePicks {
				hint = fmt.Sprintf(" (a server on 0.0.0.0 or :: answers from the address its route picks, which may not be %v, unless given --pktinfo)", dst.Addr())
			}
			// What the engine says after "no reply": "to 3 requests,
			// within 1s each", "within 300ms, when the run's duration
			// ended".
			what := runErr.Error()
			if i := strings.Index(what, traffic.ErrNoReply.Error()); i >= 0 {
				what = what[i+len(traffic.ErrNoReply.Error()):]
			}
			switch {
			case r.Late+r.WarmupLate > 0:
				err = fmt.Errorf("pingpong: no reply from %v%s: give a longer --timeout", dst, what)
			case r.Resized > 0:
				// Something answers, but not with this run's requests
				// whole: no missing server.
				err = fmt.Errorf("pingpong: no reply from %v%s, but %d of this run's requests came back resized (not --size %d bytes: cut short or grown on the way)",
					dst, what, r.Resized, o.size)
			default:
				err = fmt.Errorf("pingpong: no reply from %v%s: is `skb pingpong --server` running there?%s", dst, what, hint)
			}
		default:
			err = fmt.Errorf("pingpong: %w", runErr)
		}
		if p.enc != nil {
			// A failed run still ends its NDJSON with a result
			// object, which says why.
			printPingResult(p, r, o, spec, dst, sc.stopped(), err)
		}
		if err != nil {
			return err
		}
	}
	// A server that stops during the run refuses the requests after it
	// (ECONNREFUSED on the connected udp device); one it took into its
	// socket as it stopped goes unanswered, and the client waits --timeout
	// for it before the next request meets the refusal.
	refused := errors.Is(runErr, syscall.ECONNREFUSED)
	if p.enc == nil {
		// ibv_rc_pingpong's two lines, then the percentiles.
		w := p.w
		usec := r.Seconds * 1e6
		fmt.Fprintf(w, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", r.Bytes, usec/1e6, r.Mbps)
		fmt.Fprintf(w, "%d iters in %.2f seconds = %.2f usec/iter\n", r.Iters, usec/1e6, r.UsecPerIter)
		fmt.Fprintf(w, "p50 = %.2f usec, p99 = %.2f usec, p99.9 = %.2f usec\n", us(r.P50), us(r.P99), us(r.P999))
		if (r.Lost > 0 || r.WarmupLost > 0) && !refused {
			// After a refusal the error line counts them.
			late, warm := "", ""
			if r.Late > 0 {
				late = fmt.Sprintf("; %d came later", r.Late)
			}
			if r.WarmupLost > 0 {
				warm = fmt.Sprintf(", and %d of the warm-up's", r.WarmupLost)
			}
			fmt.Fprintf(w, "%d %s lost (no reply within %v%s)%s\n", r.Lost, plural(r.Lost, "request", "requests"), o.timeout, late, warm)
		}
	}
	var endErr error
	switch {
	case refused:
		var lost string
		if r.Lost > 0 {
			lost = fmt.Sprintf("; %d %s before the refusal got no reply within %v (a request the server takes as it stops is never answered)",
				r.Lost, plural(r.Lost, "request", "requests"), o.timeout)
		}
		endErr = fmt.Errorf("pingpong: %v refused the packets (ICMP port unreachable) after %d measured round trips: the `skb pingpong --server` there stopped during the run (its --duration, --idle or --count, or it was killed?)%s; the result above is what was measured",
			dst, r.Iters, lost)
	case runErr != nil:
		endErr = fmt.Errorf("pingpong: %w", runErr)
	}
	if p.enc != nil && r.Iters > 0 {
		printPingResult(p, r, o, spec, dst, sc.stopped(), endErr)
	}
	switch {
	case endErr != nil:
		return endErr
	case p.err() != nil:
		return fmt.Errorf("pingpong: %w", p.err())
	}
	if r.Iters == 0 && sc.signal() != 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "skb: pingpong: no round trip measured: the signal came during the warm-up (--warmup), whose round trips are not measured")
	}
	return sc.interrupted("pingpong")
}

// printPingResult prints the client's result object; err, when not nil, is
// the run's error, which the object carries in "error" as the command's
// error line says it, without its "skb: " prefix, in NDJSON.
func printPingResult(p *printer, r traffic.PingPongResult, o *pingpongOpts, spec devSpec, dst netip.AddrPort, si stopInfo, runErr error) {
	cu, cs := cpuTimes()
	j := pingpongResultJSON{CPUUser: cu, CPUSys: cs, Type: "result", Iters: r.Iters, Bytes: r.Bytes, Seconds: r.Seconds, Mbps: r.Mbps,
		UsecPerIter: r.UsecPerIter, P50: us(r.P50), P90: us(r.P90), P99: us(r.P99), P999: us(r.P999),
		Min: us(r.Min), Mean: us(r.Mean), Max: us(r.Max), Lost: r.Lost, Late: r.Late, WarmupLost: r.WarmupLost, WarmupLate: r.WarmupLate, Stray: r.Stray, Resized: r.Resized, Size: r.Size, BusyPoll: o.busy,
		Dev: spec.String(), Connect: dst.String(), stopInfo: si}
	if spec.kind == devMemring {
		j.Connect = ""
	}
	if runErr != nil {
		j.Error = runErr.Error()
	}
	p.line("", j)
}

// noIters is the error of a client run that --duration ended before it
// measured a round trip: the warm-up took it all, or every request after
// it was lost.
func noIters(o *pingpongOpts, lost int) error {
	d := o.duration
	if d == 0 {
		d = traffic.DefaultDuration
	}
	warm := o.warmup
	switch {
	case warm == 0:
		warm = min(o.iters/10, 1000)
	case warm < 0:
		warm = 0
	}
	lostNote := ""
	if lost > 0 {
		lostNote = fmt.Sprintf(" (%d %s got no reply within %v)", lost, plural(lost, "request", "requests"), o.timeout)
	}
	if warm == 0 {
		return fmt.Errorf("pingpong: no round trip measured: --duration %v ran out before the first round trip was done%s; give a longer --duration",
			d, lostNote)
	}
	return fmt.Errorf("pingpong: no round trip measured: --duration %v ran out before the %d warm-up round trips (--warmup) and the first measured one were done%s; give a longer --duration or a smaller --warmup",
		d, warm, lostNote)
}

// pingWait is the AF_XDP wait policy of both pingpong sides: with
// --busy-poll a spin, without it a sleep in poll(2) until the frame comes.
// One packet in flight leaves nothing to batch, so the kernel's wake-up
// costs less than WaitSleep's naps, which a round trip would wait out on
// both sides.
func pingWait(busy bool) afxdp.WaitPolicy {
	if busy {
		return afxdp.WaitSpin
	}
	return afxdp.WaitPoll
}
