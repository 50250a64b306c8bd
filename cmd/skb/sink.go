package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skbdev/skb/driver/afxdp"
	"github.com/skbdev/skb/driver/udp"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/traffic"
)

// sinkSleep is the sink's default sleep between polls while traffic flows.
const sinkSleep = traffic.DefaultSinkSleep

// sinkMaxFlows is the most ports a sink listens on: on the udp device one
// socket each, and as many sockets held on a link-layer device.
const sinkMaxFlows = 1024

// sinkFlowBudget is the sink's default --budget on the udp device over
// flows ports: traffic.DefaultBudget (64) up to 64 ports, then 4096/flows,
// at least 8. A port's budget is also its receive batch, and each batch
// receive posts that many 68 KiB buffers: over 256 ports a budget of 16
// measured the same rate as 64 from a 64-flow pktgen at burst 64 with
// 0.56x the resident memory (64 against 114 MB) and a quarter of the p99
// latency (5-6 against 20-22 ms); over 1024 ports a budget of 8, 0.39x
// the memory (182 against 464 MB) and a fifth of the p99 (80 against
// 400-530 ms). Over 64 ports, 16 measured no better than 64.
func sinkFlowBudget(flows int) int {
	if flows <= 64 {
		return traffic.DefaultBudget
	}
	return max(8, 4096/flows)
}

// sinkRcvBuf is the UDP socket's receive buffer, as the C reference's
// udp_recv sets it (SO_RCVBUFFORCE, 4 MiB).
const sinkRcvBuf = 4 << 20

func init() { rootCmd.AddCommand(sinkCmd()) }

type sinkOpts struct {
	listen    string
	copybreak int
	gro       bool
	duration  time.Duration
	idle      time.Duration
	count     uint64
	flows     int
	spin      bool
	sleep     time.Duration
	budget    int
	rcvbuf    int
}

func sinkCmd() *cobra.Command {
	var f devFlags
	var o sinkOpts
	cmd := &cobra.Command{
		Use:   "sink [--listen ADDR:PORT] [--copybreak N] [--gro] [-t D] [--json]",
		Short: "Receive and count packets: rate, loss and reordering from pktgen's stamps, kernel drops",
		Long: `sink receives UDP datagrams (or, on a link-layer device, UDP frames to its --listen
address and port; 0.0.0.0 or :: for any address, port 0 for any port)
and counts them, with loss, reordering and duplicates per flow from the stamps
skb pktgen writes, the kernel's drops, copybreak copies (the device's count:
on a link-layer device it copies the other frames too, so it may pass the
packets counted) and one-way latency.
It prints one line per second (and one for the run's last part second when
packets came in it, so that the lines' packets, "packets" in --json, add up
to the result's; each text line gives its rate) and a result line; the result's pps and Mbit/s are over the time from the
first packet to the last. Bytes and Mbit/s count UDP payload on
every device; a link-layer device also reports the whole frames ("Mbit/sec of
frames"; frame_bytes and frame_mbps in JSON). On afpacket a GSO super-frame (a
veth hands those over whole from a sender with GSO) counts as the datagrams
it holds, from the kernel's virtio header. A link-layer sink counts as
"other frames" what is not UDP to it, IP fragments, and frames whose IPv4
header checksum fails, or on afpacket whose UDP checksum fails (over
AF_XDP nothing says whether a frame's UDP checksum was left to be
computed, so it is not checked there).

Its socket is bound tens of milliseconds after it starts (the port refuses
datagrams until then): a script that starts pktgen right after it should
wait that long, or give --listen port 0 and wait for the line on stderr that
names the port the kernel picked.

While traffic flows it sleeps --sleep (50us) whenever it has drained the
queue, rather than asking the kernel to wake it: the sender then does no
wake-up work per packet. After a millisecond without traffic it waits to be
woken again; --sleep 0 always waits, --spin never sleeps (give --spin or
--sleep, not both).

It stops after --duration (default 10s, twice pktgen's default, so that a sink
started first sees a whole default pktgen run), after --idle (1s) without a
packet once one came (other frames do not count), or after --count packets: give it a longer --idle
to see several pktgen runs one after the other. --flows N listens on ports PORT
to PORT+N-1 (one socket each on the udp device), at most ` + fmt.Sprint(sinkMaxFlows) + `, to receive all of
a pktgen's flows. Up to one port per CPU each have a thread of their own;
more are polled in rounds by a thread per CPU, as a sleeping or spinning
thread holds its CPU (with --sleep 0, up to ` + fmt.Sprint(traffic.SoloSinks) + ` ports each have a thread
that the kernel wakes). Rounds keep up with pktgen, but a datagram of a slow
flow may be seen up to 20ms late, and over hundreds of ports the first
datagrams of each wait longer while its buffers are first touched (both show
in the latency). On one port too, the first datagrams wait while the sink first
touches its receive buffers (page faults: a few ms for a GRO sink on a virtual
machine where each fault costs tens of microseconds), which shows in the
latency of a short unpaced run (pktgen --gso -n 5000), not in a paced or
longer one.
Loss is counted per flow from the packets that arrive on those ports:
packets to other ports are never seen, so a sink with fewer --flows than its
pktgen reports no loss for the flows it misses (pktgen warns of the ICMP
port-unreachable messages they cause), and within a flow it counts the gaps
between the first and the last packet seen: packets lost before the first (a
sink started after its pktgen) are not counted at all, and those dropped
after the last, at the end of a run, show in kernel drops only. Kernel drops
are the socket's own count: with --gro the kernel counts a dropped train
once, however many datagrams it held, while lost counts datagrams. lost is
every sequence number in those gaps, so it also counts what the sender
stamped but could not send (pktgen's errors, such as a full transmit ring):
for a sink started first, lost less pktgen's errors is what the path lost.
A stamp whose check fails (corrupted on the way: AF_XDP does not verify
UDP checksums) counts as unstamped. So does one 960 or more ahead of where
its flow is, unless one of the flow's next few stamps follows it (the flow
moved there: a burst of loss). A packet older than the flow's window (its
last 961 to 1024 sequence numbers, by where the window stands)
counts as reordered and makes up for its gap in lost (a repeat that late
would hide a loss).
Each pktgen run counts as flows of its own (runs
one after the other too): two pktgens sending to one port at once are
counted apart. Beside each flow's first run, 64 more (run, flow) pairs are
counted at a time (per port on the udp device, so 65 runs a port; for all
ports together on a link-layer one, where a run of --flows N takes N); the
packets of more count as unstamped until one of them stops (a run a second
without a packet, or 65536 packets of others since its last, has stopped).
With --flows over 1 on the udp device each port counts one flow of a run,
the one that has sent the most there: a datagram of another flow (its
destination port corrupted on the way, where no checksum is checked)
counts as unstamped.

` + signalHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runSink(cmd, &f, &o) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.listen, "listen", fmt.Sprintf("127.0.0.1:%d", defaultPort), "ADDR:PORT to receive on (port 0: the kernel picks one, printed on stderr); afpacket and afxdp: an address of the interface, or 0.0.0.0 or :: for any, and port 0 for every port")
	fs.IntVar(&o.copybreak, "copybreak", netdev.DefaultCopybreak, "copy packets shorter than N bytes into right-sized buffers (0: off); only into a smaller buffer than the receive buffer, up to 1920 bytes with the udp device's pool")
	fs.BoolVar(&o.gro, "gro", false, "UDP receive coalescing (UDP_GRO; udp device): trains are split back into datagrams")
	durationVarP(fs, &o.duration, "duration", "t", traffic.DefaultSinkDuration, "stop after this long")
	durationVarP(fs, &o.idle, "idle", "", traffic.DefaultIdle, "stop after this long without a packet, once one came (frames counted in other frames do not count)")
	fs.Uint64VarP(&o.count, "count", "n", 0, "stop after N packets (0: no limit)")
	fs.IntVarP(&o.flows, "flows", "f", 1, fmt.Sprintf("receive on ports PORT to PORT+N-1 (pktgen's flows), 1 to %d", sinkMaxFlows))
	fs.BoolVar(&o.spin, "spin", false, "busy-poll: poll again at once when nothing came, instead of sleeping")
	durationVarP(fs, &o.sleep, "sleep", "", sinkSleep, "while traffic flows, sleep this long when the queue is drained instead of waiting to be woken (0: always wait)")
	fs.IntVar(&o.budget, "budget", traffic.DefaultBudget, fmt.Sprintf("packets per poll of each port, also the receive batch (%d on afxdp; over more than 64 --flows, 4096/flows and at least 8)", afxdp.PollBudget))
	fs.IntVar(&o.rcvbuf, "rcvbuf", sinkRcvBuf, "udp socket receive buffer in bytes")
	addDevFlags(cmd, &f, "")
	return cmd
}

type sinkIntervalJSON struct {
	Type        string  `json:"type"`
	Elapsed     float64 `json:"elapsed"`
	Seconds     float64 `json:"seconds"`
	Packets     uint64  `json:"packets"`
	Bytes       uint64  `json:"bytes"`
	PPS         float64 `json:"pps"`
	Mbps        float64 `json:"mbps"`
	Lost        uint64  `json:"lost"`
	Reordered   uint64  `json:"reordered"`
	KernelDrops uint64  `json:"kernel_drops"`
	// Whole frames, on link-layer devices only.
	FrameBytes uint64  `json:"frame_bytes,omitempty"`
	FrameMbps  float64 `json:"frame_mbps,omitempty"`
}

type sinkResultJSON struct {
	Type        string  `json:"type"`
	Packets     uint64  `json:"packets"`
	Bytes       uint64  `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	PPS         float64 `json:"pps"`
	Mbps        float64 `json:"mbps"`
	Lost        uint64  `json:"lost"`
	Reordered   uint64  `json:"reordered"`
	Duplicates  uint64  `json:"duplicates"`
	Unstamped   uint64  `json:"unstamped"`
	Flows       int     `json:"flows"`
	KernelDrops uint64  `json:"kernel_drops"`
	Dropped     uint64  `json:"dropped"`
	Copybreak   uint64  `json:"copybreak"`
	// Truncated counts packets longer than the receive buffers, dropped
	// (rx_truncated; also in Dropped).
	Truncated uint64 `json:"truncated"`
	Other     uint64 `json:"other"`
	// LatencyCount is how many packets were timed (a stamp with a send
	// time: not pktgen --no-timestamp's); the latency fields are 0 when
	// none was.
	LatencyCount uint64  `json:"latency_count"`
	LatencyP50   float64 `json:"latency_p50_us"`
	LatencyP99   float64 `json:"latency_p99_us"`
	LatencyP999  float64 `json:"latency_p999_us"`
	LatencyMax   float64 `json:"latency_max_us"`
	Dev          string  `json:"dev"`
	Listen       string  `json:"listen"`
	CPUUser      float64 `json:"cpu_user"`
	CPUSys       float64 `json:"cpu_sys"`
	// Whole frames, on link-layer devices only.
	FrameBytes uint64  `json:"frame_bytes,omitempty"`
	FrameMbps  float64 `json:"frame_mbps,omitempty"`
	// Error is the run's error (the same as the error line on stderr
	// says), absent when the run succeeded.
	Error string `json:"error,omitempty"`
	stopInfo
}

func (o *sinkOpts) check(cmd *cobra.Command) error {
	switch {
	case o.copybreak < 0:
		return fmt.Errorf("sink: --copybreak %d: want 0 (off) or more", o.copybreak)
	case o.duration <= 0:
		return fmt.Errorf("sink: --duration %v: want a positive duration (every run is bounded)", o.duration)
	case o.idle <= 0:
		return fmt.Errorf("sink: --idle %v: want a positive duration", o.idle)
	case o.flows < 1 || o.flows > sinkMaxFlows:
		return fmt.Errorf("sink: --flows %d: want 1 to %d (a socket per port)", o.flows, sinkMaxFlows)
	case o.budget < 1 || o.budget > 1<<16:
		return fmt.Errorf("sink: --budget %d: want 1 to 65536", o.budget)
	case o.sleep < 0 || o.sleep > time.Second:
		return fmt.Errorf("sink: --sleep %v: want 0 (wait to be woken) to 1s", o.sleep)
	case o.spin && cmd.Flags().Changed("sleep"):
		return errors.New("sink: give --spin or --sleep, not both")
	case o.rcvbuf < 0 || o.rcvbuf > udp.MaxSockBuf:
		return fmt.Errorf("sink: --rcvbuf %d: want 0 (the kernel's default) to %d bytes", o.rcvbuf, udp.MaxSockBuf)
	}
	return nil
}

// checkListen refuses addresses a sink cannot receive on.
func checkListen(flag string, a netip.AddrPort) error {
	ip := a.Addr()
	switch {
	case ip.IsMulticast():
		return fmt.Errorf("--%s %v is a multicast group, which the sink does not join: give a unicast address of this host or 0.0.0.0", flag, a)
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("--%s %v is the broadcast address: give a unicast address of this host or 0.0.0.0", flag, a)
	}
	return nil
}

// parseListen is parseDevAddr for the commands that receive (sink and the
// pingpong server): it parses --dev and --listen, and refuses with
// checkListen an address they cannot receive on.
func parseListen(dev, kinds, listen string) (devSpec, netip.AddrPort, error) {
	spec, a, err := parseDevAddr(dev, kinds, "listen", listen)
	if err != nil {
		return devSpec{}, netip.AddrPort{}, err
	}
	if err := checkListen("listen", a); err != nil {
		return devSpec{}, netip.AddrPort{}, err
	}
	return spec, a, nil
}

// checkLinkListen refuses, for who (a sink, a pingpong server) on spec's
// link-layer device, a --listen address that is not one of the interface's:
// on udp the kernel refuses to bind it (bindErr), but a link-layer device
// takes every frame on the link, so a wrong address would pass unnoticed.
// The unspecified address (0.0.0.0, ::) means any. given says whether the
// command line gave --listen, or the default (127.0.0.1) stands.
func checkLinkListen(who string, spec devSpec, listen netip.AddrPort, given bool) error {
	if listen.Addr().IsUnspecified() {
		return nil
	}
	l, err := lookupLink(spec.ifname)
	if err != nil {
		return err
	}
	ok, err := l.hasAddr(listen.Addr())
	if err != nil || ok {
		return err
	}
	wild := netip.AddrPortFrom(unspecified(listen.Addr()), listen.Port())
	if !given {
		return fmt.Errorf("--dev %v needs --listen: the default, %v, is not an address of %s; give one of its addresses (ip addr show dev %s) or %v for any",
			spec, listen.Addr(), spec.ifname, spec.ifname, wild)
	}
	return fmt.Errorf("--listen %v: %v is not an address of %s (ip addr show dev %s): %s on --dev %v can only receive on the interface's own addresses, or on %v for any",
		listen, listen.Addr(), spec.ifname, spec.ifname, who, spec, wild)
}

// recvSize is the udp device's Config.RecvSize for the commands that
// receive on a, or send to a and receive the replies: the largest UDP
// payload of a's family (udp.MaxDatagram4; udp.MaxDatagram6 for IPv6,
// which the dual-stack :: also receives), so that every datagram pktgen or
// a pingpong client can send is received. Without it the driver's receive
// buffers hold 1920 bytes and drop longer datagrams (rx_truncated). The
// buffers then come from the pool's 68 KiB class; datagrams shorter than
// the copybreak threshold are still copied into small ones.
func recvSize(a netip.Addr) int {
	if a.Is4() {
		return udp.MaxDatagram4
	}
	return udp.MaxDatagram6
}

// maxPayload returns the largest UDP payload pktgen and the pingpong
// client send to a, in bytes: udp.MaxDatagram4 to an IPv4 address,
// udp.MaxDatagram6 to an IPv6 one, as the udp device takes them.
func maxPayload(a netip.Addr) int {
	if a.Unmap().Is4() {
		return udp.MaxDatagram4
	}
	return udp.MaxDatagram6
}

// payloadLimit says where maxPayload(a) comes from, for the messages.
func payloadLimit(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "the largest UDP payload over IPv4"
	}
	return "the largest UDP payload over IPv6"
}

// rxTruncated returns the packets devs dropped as longer than their receive
// buffers, the sum of their rx_truncated counters.
func rxTruncated(devs []netdev.Device) uint64 {
	var n uint64
	for _, d := range devs {
		n += d.Stats().RxTruncated
	}
	return n
}

// truncatedNote returns the result line's note of n truncated packets,
// ", N truncated", or "" when there were none.
func truncatedNote(n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d truncated", n)
}

// sinkResultLine returns the sink's text result line for r, with trunc
// packets dropped as longer than the receive buffers: the counts from the
// stamps (lost, reordered, duplicates), the device's (kernel drops,
// copybreak, which counts every frame the device copied, counted or not),
// then the notes of unstamped packets, of a link-layer sink's other frames
// and of truncated packets when there were any.
func sinkResultLine(r traffic.SinkResult, trunc uint64) string {
	return fmt.Sprintf("received %d packets, %d bytes in %.2f seconds = %.0f pps, %.2f Mbit/sec%s; %d lost, %d reordered, %d duplicates, %d kernel drops, %d copybreak%s%s%s",
		r.Packets, r.Bytes, r.Seconds, r.PPS, r.Mbps, frameRate(r.FrameBytes, r.FrameMbps), r.Lost, r.Reordered, r.Duplicates,
		r.KernelDrops, r.Copybreak, unstampedNote(r.Unstamped), otherNote(r.Other), truncatedNote(trunc))
}

// otherNote returns the result line's note of n frames a link-layer sink
// did not count (not UDP to its ports, IP fragments, unparsable, a bad
// checksum), or ""
// when there were none.
func otherNote(n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d other frames", n)
}

// unstampedNote returns the result line's note of n packets without a
// stamp, ", N unstamped", or "" when there were none.
func unstampedNote(n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d unstamped", n)
}

// truncatedWarning is the sink's stderr line for n packets dropped as
// longer than the receive buffers.
func truncatedWarning(n uint64) string {
	return fmt.Sprintf("skb: sink: warning: %d %s longer than the device's receive buffers and %s dropped (rx_truncated)", n,
		plural(int(min(n, 2)), "packet was", "packets were"), plural(int(min(n, 2)), "was", "were"))
}

// bindErr explains a failed bind of a, the address that the flag named flag
// gives (--listen, or --src: the address alone when its port is 0). who,
// when not empty, names what binds it ("a sink", "a pingpong server") in
// the message of an address that is not the host's. Other errors are
// returned as they are.
func bindErr(who, flag string, a netip.AddrPort, err error) error {
	v := a.String()
	if flag == "src" && a.Port() == 0 {
		v = a.Addr().String()
	}
	switch {
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		var msg string
		if v == a.Addr().String() {
			msg = fmt.Sprintf("--%s %s is not an address of this host (in this network namespace)", flag, v)
		} else {
			msg = fmt.Sprintf("--%s %s: %v is not an address of this host (in this network namespace)", flag, v, a.Addr())
		}
		switch {
		case who == "":
		case flag == "src":
			msg += ": " + who + " can only send from its own addresses"
		default:
			msg += ": " + who + " can only receive on its own addresses"
		}
		return errors.New(msg)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("--%s %s is in use by another socket", flag, v)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("--%s %s: permission denied (ports below 1024 need root)", flag, v)
	}
	return err
}

func runSink(cmd *cobra.Command, f *devFlags, o *sinkOpts) error {
	if err := o.check(cmd); err != nil {
		return err
	}
	// The signals are caught from here on: see startRun.
	sc := signalContext()
	defer func() { sc.stop() }()
	spec, listen, err := parseListen(f.dev, devKinds, o.listen)
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	switch {
	case spec.kind == devMemring:
		return errors.New("sink: --dev memring: a memring pair lives inside one process; use it with pktgen or pingpong")
	case o.gro && spec.kind != devUDP:
		return errors.New("sink: --gro needs --dev udp")
	case cmd.Flags().Changed("rcvbuf") && spec.kind != devUDP:
		return fmt.Errorf("sink: --rcvbuf is the udp device's socket buffer: --dev %v receives into its own ring", spec)
	case listen.Port() == 0 && o.flows > 1:
		return errors.New("sink: --flows needs a --listen port")
	case int(listen.Port())+o.flows-1 > 0xffff:
		return fmt.Errorf("sink: --listen %v with %d flows: ports past 65535", listen, o.flows)
	}
	if spec.link() {
		if err := checkLinkListen("a sink", spec, listen, cmd.Flags().Changed("listen")); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
	}
	if !cmd.Flags().Changed("budget") {
		switch {
		case spec.kind == devAFXDP:
			o.budget = afxdp.PollBudget
		case spec.kind == devUDP:
			o.budget = sinkFlowBudget(o.flows)
		}
	}
	ncfg := netdev.Config{Copybreak: o.copybreak, Batch: min(o.budget, 1024)}
	if o.copybreak == 0 {
		ncfg.Copybreak = netdev.CopybreakOff
	}
	cfg := traffic.SinkConfig{Budget: o.budget, Spin: o.spin, Sleep: o.sleep, Duration: o.duration, Idle: o.idle, Count: o.count,
		Thread: true}
	var devs []netdev.Device
	var shared *pool.Pool
	defer func() {
		for _, d := range devs {
			d.Close()
		}
		if shared != nil {
			shared.Close() // after the devices, whose buffers it holds
		}
	}()
	if spec.kind == devUDP {
		if o.flows > 1 {
			// One pool for all the ports' devices: a pool of its own
			// each would map an arena per port at its first packet
			// (with 1024 ports, most of the sink's CPU).
			shared, err = pool.New(pool.Config{Name: fmt.Sprintf("sink %v+%d", listen, o.flows)})
			if err != nil {
				return fmt.Errorf("sink: %w", err)
			}
			ncfg.Pool = shared
		}
		// KeepP: each of the sink's goroutines waits on a thread of its
		// own (Thread), and keeps its P meanwhile while they are no more
		// than the Ps (see traffic.SinkThreads).
		keepP := traffic.SinkThreads(o.flows, cfg) <= runtime.GOMAXPROCS(0)
		for i := range o.flows {
			a := netip.AddrPortFrom(listen.Addr(), listen.Port()+uint16(i))
			ucfg := udp.Config{Config: ncfg, Local: a, GRO: o.gro, RcvBuf: o.rcvbuf, NoSrc: true, KeepP: keepP}
			if !o.gro {
				// GRO's train buffers already hold the largest datagram.
				ucfg.RecvSize = recvSize(a.Addr())
			}
			d, err := udp.Open(ucfg)
			if err != nil {
				if i > 0 && errors.Is(err, syscall.EADDRINUSE) {
					return fmt.Errorf("sink: --listen %v --flows %d: port %d, flow %d's, is in use by another socket", listen, o.flows, a.Port(), i)
				}
				return fmt.Errorf("sink: %w", bindErr("a sink", "listen", a, err))
			}
			devs = append(devs, d)
			if o.gro && !d.GRO() {
				return errors.New("sink: --gro: the kernel refused UDP_GRO on this socket")
			}
			if i == 0 && o.copybreak > d.Copybreak() && d.Copybreak() > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "skb: sink: warning: --copybreak %d: datagrams of %d bytes or more are not copied: a copy must land in a smaller block than the receive buffer's, and the pool has no class between the copy's size and it\n", o.copybreak, d.Copybreak())
			}
			if listen.Port() == 0 {
				listen = d.LocalAddr() // the result names the port the kernel picked (one flow: see above)
				fmt.Fprintf(os.Stderr, "skb: sink: listening on %v\n", listen)
			}
		}
	} else {
		wait := afxdp.WaitSleep
		if o.spin {
			wait = afxdp.WaitSpin
		}
		d, err := linkDev(spec, ncfg, false, wait)
		if err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		devs = append(devs, d)
		for _, w := range rxWarnings("sink", spec, d) {
			fmt.Fprintln(cmd.ErrOrStderr(), w)
		}
		if listen.Port() != 0 {
			defer holdPorts(listen, o.flows)()
		} else if spec.kind == devAFPacket {
			// (AF_XDP's program takes every frame of the queue from the
			// stack, which then answers none.)
			fmt.Fprintf(cmd.ErrOrStderr(), "skb: sink: warning: on every port (--listen port 0) the sink holds none, so this host's stack answers each datagram with an ICMP port unreachable, which a sender such as skb pktgen reports; give --listen a port (and --flows) to keep it quiet\n")
		}
		cfg.Link, cfg.Port, cfg.Ports = true, listen.Port(), o.flows
		if !listen.Addr().IsUnspecified() {
			cfg.Addr = listen.Addr()
		}
	}

	p := newPrinter(cmd.OutOrStdout(), f.asJSON)
	cfg.OnInterval = func(iv traffic.SinkInterval) {
		p.line(fmt.Sprintf("%s %.0f pps, %.2f Mbit/sec%s, %d lost, %d reordered, %d kernel drops",
			secs(iv.Elapsed), iv.PPS, iv.Mbps, frameRate(iv.FrameBytes, iv.FrameMbps), iv.Lost, iv.Reordered, iv.KernelDrops),
			sinkIntervalJSON{Type: "interval", Elapsed: iv.Elapsed.Seconds(), Seconds: iv.Seconds, Packets: iv.Packets, Bytes: iv.Bytes,
				PPS: iv.PPS, Mbps: iv.Mbps, Lost: iv.Lost, Reordered: iv.Reordered, KernelDrops: iv.KernelDrops,
				FrameBytes: iv.FrameBytes, FrameMbps: iv.FrameMbps})
	}
	if err := startRun(f, sc); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	r, runErr := traffic.RunSinks(sc, devs, cfg)
	l := r.Latency
	cu, cs := cpuTimes()
	trunc := rxTruncated(devs)
	j := sinkResultJSON{Type: "result", Packets: r.Packets, Bytes: r.Bytes, Seconds: r.Seconds, PPS: r.PPS, Mbps: r.Mbps,
		Lost: r.Lost, Reordered: r.Reordered, Duplicates: r.Duplicates, Unstamped: r.Unstamped, Flows: r.Flows,
		KernelDrops: r.KernelDrops, Dropped: r.Dropped, Copybreak: r.Copybreak, Other: r.Other,
		LatencyCount: l.Count, LatencyP50: us(l.P50), LatencyP99: us(l.P99), LatencyP999: us(l.P999), LatencyMax: us(l.Max),
		Truncated: trunc, Dev: spec.String(), Listen: listen.String(), CPUUser: cu, CPUSys: cs, FrameBytes: r.FrameBytes, FrameMbps: r.FrameMbps, stopInfo: sc.stopped()}
	if runErr != nil {
		runErr = fmt.Errorf("sink: %w", runErr)
		j.Error = runErr.Error()
	}
	p.line(sinkResultLine(r, trunc), j)
	if !f.asJSON && l.Count > 0 {
		fmt.Fprintf(p.w, "one-way latency: p50 = %.2f usec, p99 = %.2f usec, p99.9 = %.2f usec, max = %.2f usec\n",
			us(l.P50), us(l.P99), us(l.P999), us(l.Max))
	}
	if trunc > 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), truncatedWarning(trunc))
	}
	if runErr != nil {
		return runErr
	}
	if err := p.err(); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return sc.interrupted("sink")
}
