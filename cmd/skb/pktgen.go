package main

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skbdev/skb/driver/afxdp"
	"github.com/skbdev/skb/driver/udp"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/traffic"
)

// pktgenSndBuf is the UDP socket's send buffer, as the C reference's
// udp_send sets it (SO_SNDBUFFORCE, 4 MiB).
const pktgenSndBuf = 4 << 20

// pktgenMaxFlows is the most flows pktgen sends: one destination port
// each, PORT to PORT+N-1 within 1 to 65535.
const pktgenMaxFlows = traffic.MaxFlows - 1

func init() { rootCmd.AddCommand(pktgenCmd()) }

type pktgenOpts struct {
	dst      string
	size     int
	imix     string
	flows    int
	flowLen  int
	count    uint64
	duration time.Duration
	rate     float64
	burst    int
	clone    int
	gso      bool
	noCsum   bool
	noTstamp bool
}

func pktgenCmd() *cobra.Command {
	var f devFlags
	var o pktgenOpts
	cmd := &cobra.Command{
		Use:   "pktgen [--dst ADDR:PORT] [-s N | --imix LIST] [-f N] [-n N] [-t D] [-r PPS] [-b N] [--clone N] [--gso] [--json]",
		Short: "Send stamped UDP packets and report what the device sent",
		Long: `pktgen sends UDP packets whose payload starts with a stamp (magic, run, flow,
sequence number, send time) that skb sink counts loss, reordering and latency
from. It prints one line per second, one for the run's last part second
(the packets of the lines, "packets" in --json, add up to the result's;
each text line gives its rate), and a result line: packets, bytes,
seconds, pps, Mbit/s, errors (packets not sent, whose sequence numbers a
sink counts lost) and doorbells, from the
device's counters. Bytes and Mbit/s count UDP payload on every device; a
link-layer device also reports its whole frames ("Mbit/sec of frames";
frame_bytes and frame_mbps in JSON). The JSON result also gives queued
(packets handed to the device) and, when a send failed, first_error; the
text output says the first error on stderr.

The default destination, 127.0.0.1:9000, is the C reference udp_send's port
(and skb sink's default). Every run is bounded: by --duration (default 5s)
and, when given, --count.
Sizes are UDP payload bytes. The flows are destination ports PORT to
PORT+N-1, up to ` + fmt.Sprint(pktgenMaxFlows) + ` of them; skb sink listens on at most ` + fmt.Sprint(sinkMaxFlows) + ` ports and
counts loss only on the ports it listens on, so give it the same --flows.
With one flow the udp device's socket is connected to the destination
(connect(2)): the kernel then routes once, not for every datagram (on
loopback, 13-28% more datagrams per second for C's udp_send with -C, and
about 20% more for pktgen at --burst 64). A port where nothing listens
answers each datagram with an ICMP port unreachable. The kernel then fails
a later send on the connected socket with ECONNREFUSED, counted in errors:
every other datagram at --burst 1, far fewer within batches, where the
kernel reports the refusal only to a batch's first message and sends the
rest one per call; a refusal of the last datagrams, which no later send
reports, pktgen reads from the socket at the end (SO_ERROR). pktgen then
prints its result and exits 1 with one error line saying the destination
refused the datagrams. With several flows the
unconnected socket cannot report it at all. Either way pktgen counts the
ICMP destination-unreachable messages the kernel receives during the run
(in this network namespace, from any program in it; one per datagram over
loopback, fewer from a host that rate-limits them), prints them as
icmp_unreachable, and, without the refusal, warns on stderr when there are
any. --burst N
rings the doorbell once per N packets (xmit_more); on the udp device a
doorbell, one sendmmsg, takes at most 1024 (the kernel's UIO_MAXIOV), so a
larger burst rings once per 1024. --gso sends each burst as one UDP GSO
super-packet (udp device only) of at most 64 datagrams (UDP_MAX_SEGMENTS of
the kernel that brought UDP_SEGMENT) and at most 65507 bytes of payload (as
one datagram's): a larger burst goes as several, a doorbell each, and
datagrams over 32753 bytes go one per doorbell.
On a link-layer device pktgen computes each frame's UDP checksum;
--no-udp-csum leaves it 0 over IPv4 ("none", RFC 768), as the kernel's pktgen
does without UDPCSUM, and saves that work per packet.
--no-timestamp leaves the send time out of the stamps, as the kernel's
pktgen does with NO_TIMESTAMP: skb sink still counts loss and reordering but
reports no latency, and pktgen (without --rate, which needs the clock at every
burst) reads it once per 64 packets instead of once per burst (at --burst 1
the read costs several per cent of the rate).

By default pktgen sends only to loopback (127.0.0.0/8, ::1), to the RFC 2544
benchmarking range 198.18.0.0/15 that skb lab uses and to its IPv6 counterpart
2001:2::/48 (RFC 5180), and only when the kernel's
route to the destination has no gateway and is not the default route (a lab's
veth; with a link-layer device, on that interface): a generator pointed at a
real host, or out of a default route by a typo, is a flood. It checks the route
before it sends anything. --allow-any-dst lifts that for a network you own.

` + signalHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("burst") && o.gso {
				o.burst = 64
			}
			return runPktgen(cmd, &f, &o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dst, "dst", fmt.Sprintf("127.0.0.1:%d", defaultPort), "destination ADDR:PORT of flow 0 (the default is for the udp device: afpacket and afxdp need an address on the link)")
	fs.IntVarP(&o.size, "size", "s", traffic.DefaultSize, fmt.Sprintf("UDP payload bytes per packet, at least %d (the stamp)", traffic.StampLen))
	fs.StringVar(&o.imix, "imix", "", "a mix of sizes instead of --size: SIZE:WEIGHT,... or \"imix\" for 64:7,576:4,1472:1")
	fs.IntVarP(&o.flows, "flows", "f", 1, fmt.Sprintf("flows: destination ports PORT to PORT+N-1, 1 to %d (a sink listens on at most %d)", pktgenMaxFlows, sinkMaxFlows))
	fs.IntVar(&o.flowLen, "flow-len", 1, "packets (buffers with --clone, super-packets with --gso) to a flow before the next flow's turn")
	fs.Uint64VarP(&o.count, "count", "n", 0, "stop after N packets (0: only --duration bounds the run)")
	durationVarP(fs, &o.duration, "duration", "t", traffic.DefaultDuration, "stop after this long")
	fs.Float64VarP(&o.rate, "rate", "r", 0, "packets per second, 0 for as fast as the device takes them")
	fs.IntVarP(&o.burst, "burst", "b", 1, fmt.Sprintf("packets per doorbell, 1 to %d (datagrams per super-packet with --gso; default 64 then)", traffic.MaxBurst))
	fs.IntVar(&o.clone, "clone", 0, "send each buffer N times as clones (pktgen's clone_skb; 0 and 1 send each once); the sink counts the copies as duplicates (a copy that comes too late for the sink's window, 961 to 1024 places by where it stands, counts as a late packet, and makes up for a loss). With --gso a buffer is a super-packet of up to --burst datagrams, each copy all of them; near the end of a --count it holds fewer, so that its copies fit")
	fs.BoolVar(&o.gso, "gso", false, "send UDP GSO super-packets of --burst datagrams (udp device)")
	fs.BoolVar(&o.noTstamp, "no-timestamp", false, "leave the send time out of the stamps (pktgen's NO_TIMESTAMP): the sink times nothing, and without --rate the clock is read once per 64 packets")
	fs.BoolVar(&o.noCsum, "no-udp-csum", false, "link-layer devices, IPv4: leave the UDP checksum 0 (\"none\", RFC 768) instead of computing it per packet")
	addDevFlags(cmd, &f, ", memring (a simulated NIC in this process, drained by a goroutine: the generator's own cost)")
	addSenderFlags(cmd, &f)
	return cmd
}

func (o *pktgenOpts) check(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	switch {
	case changed("imix") && changed("size"):
		return errors.New("pktgen: give --size or --imix, not both")
	case changed("imix") && strings.TrimSpace(o.imix) == "":
		return errors.New("pktgen: --imix: empty list")
	case o.flows < 1 || o.flows > pktgenMaxFlows:
		return fmt.Errorf("pktgen: --flows %d: want 1 to %d", o.flows, pktgenMaxFlows)
	case o.flowLen < 1:
		return fmt.Errorf("pktgen: --flow-len %d: want 1 or more", o.flowLen)
	case changed("flow-len") && o.flows == 1:
		return fmt.Errorf("pktgen: --flow-len is the packets a flow sends before the next flow's turn: give --flows 2 or more")
	case o.duration <= 0:
		return fmt.Errorf("pktgen: --duration %v: want a positive duration (every run is bounded)", o.duration)
	case o.rate < 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0):
		return fmt.Errorf("pktgen: --rate %v: want 0 (no limit) or a positive number of packets per second", o.rate)
	case o.burst < 1 || o.burst > traffic.MaxBurst:
		return fmt.Errorf("pktgen: --burst %d: want 1 to %d", o.burst, traffic.MaxBurst)
	case o.clone < 0:
		return fmt.Errorf("pktgen: --clone %d: want 0 or more", o.clone)
	}
	return nil
}

type pktgenIntervalJSON struct {
	Type      string  `json:"type"`
	Elapsed   float64 `json:"elapsed"`
	Seconds   float64 `json:"seconds"`
	Packets   uint64  `json:"packets"`
	Bytes     uint64  `json:"bytes"`
	PPS       float64 `json:"pps"`
	Mbps      float64 `json:"mbps"`
	Errors    uint64  `json:"errors"`
	Doorbells uint64  `json:"doorbells"`
	// Whole frames, on link-layer devices only.
	FrameBytes uint64  `json:"frame_bytes,omitempty"`
	FrameMbps  float64 `json:"frame_mbps,omitempty"`
}

type pktgenResultJSON struct {
	Type      string  `json:"type"`
	Packets   uint64  `json:"packets"`
	Bytes     uint64  `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	PPS       float64 `json:"pps"`
	Mbps      float64 `json:"mbps"`
	Errors    uint64  `json:"errors"`
	Doorbells uint64  `json:"doorbells"`
	Queued    uint64  `json:"queued"`
	// Whole frames, on link-layer devices only.
	FrameBytes uint64  `json:"frame_bytes,omitempty"`
	FrameMbps  float64 `json:"frame_mbps,omitempty"`
	// ICMPUnreachable is the growth of the namespace's ICMP
	// destination-unreachable counter over the run (not on memring).
	ICMPUnreachable uint64  `json:"icmp_unreachable"`
	Flows           int     `json:"flows"`
	Dev             string  `json:"dev"`
	Dst             string  `json:"dst,omitempty"` // none on memring, which has no addresses
	Size            int     `json:"size,omitempty"`
	IMIX            string  `json:"imix,omitempty"`
	Burst           int     `json:"burst"`
	Clone           int     `json:"clone,omitempty"`
	GSO             bool    `json:"gso"`
	NoUDPCsum       bool    `json:"no_udp_csum,omitempty"`
	NoTimestamp     bool    `json:"no_timestamp,omitempty"`
	Rate            float64 `json:"rate,omitempty"`
	FirstError      string  `json:"first_error,omitempty"`
	CPUUser         float64 `json:"cpu_user"`
	CPUSys          float64 `json:"cpu_sys"`
	// Error is the run's error (the same as the error line on stderr
	// says), absent when the run succeeded.
	Error string `json:"error,omitempty"`
	stopInfo
}

func runPktgen(cmd *cobra.Command, f *devFlags, o *pktgenOpts) error {
	if err := o.check(cmd); err != nil {
		return err
	}
	// The signals are caught from here on: see startRun.
	sc := signalContext()
	defer func() { sc.stop() }()
	spec, dst, err := parseDevAddr(f.dev, devKindsMemring, "dst", o.dst)
	if err != nil {
		return fmt.Errorf("pktgen: %w", err)
	}
	switch {
	case int(dst.Port())+o.flows-1 > 0xffff:
		return fmt.Errorf("pktgen: --dst %v with %d flows: ports must lie in 1 to 65535", dst, o.flows)
	case !unicast(dst.Addr()):
		return fmt.Errorf("pktgen: --dst %v: want a unicast address", dst)
	case o.size < traffic.StampLen || o.size > maxPayload(dst.Addr()):
		return fmt.Errorf("pktgen: --size %d: want %d to %d bytes (%s)", o.size, traffic.StampLen, maxPayload(dst.Addr()), payloadLimit(dst.Addr()))
	case o.gso && spec.kind != devUDP:
		return fmt.Errorf("pktgen: --gso needs --dev udp (link-layer devices send frames as they are)")
	case f.dstMAC != "" && !spec.link() && spec.kind != devMemring:
		return fmt.Errorf("pktgen: --dst-mac needs a link-layer device (afpacket or afxdp)")
	case spec.link() && !cmd.Flags().Changed("dst"):
		// The default, 127.0.0.1, is not on any link.
		return fmt.Errorf("pktgen: --dev %v needs --dst (an address on the link)", spec)
	}
	if spec.kind == devMemring {
		if err := checkMemringAddr(cmd, "dst"); err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
	}
	if f.dstMAC != "" && spec.link() {
		if _, err := dstMAC(f); err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
	}
	cfg := traffic.PktgenConfig{
		Size: o.size, Flows: o.flows, FlowLen: o.flowLen, Count: o.count, Duration: o.duration,
		Rate: o.rate, Burst: o.burst, Clone: o.clone, GSO: o.gso, NoTimestamp: o.noTstamp,
	}
	if o.imix != "" {
		if cfg.IMIX, err = traffic.ParseIMIX(o.imix); err != nil {
			// The flag names the setting: the message without the
			// library's "traffic: invalid config: ".
			// "imix "LIST": ..." reads as "--imix "LIST": ...".
			msg := strings.TrimPrefix(err.Error(), traffic.ErrConfig.Error()+": ")
			if rest, ok := strings.CutPrefix(msg, "imix \""); ok {
				return fmt.Errorf("pktgen: --imix \"%s", rest)
			}
			return fmt.Errorf("pktgen: --imix: %s", msg)
		}
		for _, e := range cfg.IMIX {
			if e.Size > maxPayload(dst.Addr()) {
				return fmt.Errorf("pktgen: --imix: size %d is over %d bytes (%s)", e.Size, maxPayload(dst.Addr()), payloadLimit(dst.Addr()))
			}
		}
	}
	ncfg := netdev.Config{Batch: max(netdev.DefaultBatch, o.burst)}
	var dev netdev.Device
	var closeDev closer
	if o.noCsum && (spec.kind == devUDP || spec.kind == devMemring) {
		return fmt.Errorf("pktgen: --no-udp-csum is for the link-layer devices (afpacket, afxdp), which write the UDP header themselves, not --dev %v", spec)
	}
	switch {
	case spec.kind == devUDP:
		src, err := parseSrc(f.src)
		if err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
		if !src.Addr().IsValid() {
			src = netip.AddrPortFrom(unspecified(dst.Addr()), src.Port())
		} else if src.Addr().Is4() != dst.Addr().Is4() {
			return fmt.Errorf("pktgen: --src %v and --dst %v are of different families", src.Addr(), dst.Addr())
		}
		if err := checkDst("dst", f, spec, src, dst); err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
		if sendsToSelf(src, dst, o.flows) {
			return fmt.Errorf("pktgen: --src %v is a destination of --dst %v (flows to ports %d-%d): pktgen would send to its own socket", src, dst, dst.Port(), int(dst.Port())+o.flows-1)
		}
		ucfg := udp.Config{Config: ncfg, Local: src, GSO: o.gso, SndBuf: pktgenSndBuf}
		// pktgen receives nothing: no copybreak, whose buffers Open
		// would make.
		ucfg.Copybreak = netdev.CopybreakOff
		if o.flows == 1 {
			// One destination: connected, the kernel keeps its route.
			ucfg.Remote = dst
		}
		d, err := udp.Open(ucfg)
		if err != nil {
			if f.src != "" {
				err = bindErr("pktgen", "src", src, err)
			}
			return fmt.Errorf("pktgen: %w", err)
		}
		if o.gso && !d.GSO() {
			d.Close()
			return errors.New("pktgen: --gso: the kernel refused UDP_SEGMENT on this socket")
		}
		if w := fragmentWarning("pktgen", o.size, cfg.IMIX, src, dst); w != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), w)
		}
		dev, closeDev = d, d.Close
		if o.flows > 1 {
			cfg.Dst = dst
		}
	case spec.kind == devMemring:
		if err := checkMemringSize(largest(o.size, cfg.IMIX)); err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
		dev, closeDev, err = memringPeer(drain)
		if err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
	default:
		frame, err := linkTarget("dst", spec, f, dst)
		if err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
		if o.noCsum {
			if dst.Addr().Is6() {
				return errors.New("pktgen: --no-udp-csum: UDP over IPv6 must carry a checksum (RFC 8200 section 8.1)")
			}
			frame.NoChecksum = true
		}
		d, err := linkDev(spec, ncfg, true, afxdp.WaitSleep)
		if err != nil {
			return fmt.Errorf("pktgen: %w", err)
		}
		what, size := largest(o.size, cfg.IMIX)
		if err := checkFrameSize(what, spec, d, size, dst.Addr().Is6()); err != nil {
			d.Close()
			return fmt.Errorf("pktgen: %w", err)
		}
		dev, closeDev, cfg.Frame = d, d.Close, frame
		if w := linkWarning("pktgen", spec, "goes out"); w != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), w)
		}
	}
	defer closeDev()

	p := newPrinter(cmd.OutOrStdout(), f.asJSON)
	cfg.OnInterval = func(iv traffic.PktgenInterval) {
		p.line(fmt.Sprintf("%s %.0f pps, %.2f Mbit/sec%s, %d errors, %d doorbells",
			secs(iv.Elapsed), iv.PPS, iv.Mbps, frameRate(iv.FrameBytes, iv.FrameMbps), iv.Errors, iv.Doorbells),
			pktgenIntervalJSON{Type: "interval", Elapsed: iv.Elapsed.Seconds(), Seconds: iv.Seconds, Packets: iv.Packets,
				Bytes: iv.Bytes, PPS: iv.PPS, Mbps: iv.Mbps, Errors: iv.Errors, Doorbells: iv.Doorbells,
				FrameBytes: iv.FrameBytes, FrameMbps: iv.FrameMbps})
	}
	g, err := traffic.NewPktgen(dev, cfg)
	if err != nil {
		return fmt.Errorf("pktgen: %w", err)
	}
	defer g.Close()
	if err := startRun(f, sc); err != nil {
		return fmt.Errorf("pktgen: %w", err)
	}
	icmp0, icmpOK := icmpUnreachable(dst.Addr().Is6())
	var r traffic.PktgenResult
	var runErr error
	onThread(func() { r, runErr = g.Run(sc) })
	var icmp uint64
	if n, ok := icmpUnreachable(dst.Addr().Is6()); ok && icmpOK && spec.kind != devMemring && n > icmp0 {
		icmp = n - icmp0
	}
	j := pktgenResultJSON{Type: "result", Packets: r.Packets, Bytes: r.Bytes, Seconds: r.Seconds, PPS: r.PPS, Mbps: r.Mbps,
		Errors: r.Errors, Doorbells: r.Doorbells, Queued: r.Queued, Flows: r.Flows, Dev: spec.String(),
		IMIX: o.imix, Burst: o.burst, Clone: o.clone, GSO: o.gso, NoUDPCsum: o.noCsum, NoTimestamp: o.noTstamp, Rate: o.rate, ICMPUnreachable: icmp,
		FrameBytes: r.FrameBytes, FrameMbps: r.FrameMbps, stopInfo: sc.stopped()}
	if o.imix == "" {
		j.Size = o.size
	}
	if spec.kind != devMemring {
		j.Dst = dst.String()
	}
	j.CPUUser, j.CPUSys = cpuTimes()
	if r.FirstErr != nil {
		j.FirstError = r.FirstErr.Error()
	}
	if done := r.Packets + r.Errors; runErr != nil && r.Queued > done {
		// A device that stopped taking packets (an interface removed
		// under an AF_XDP queue) keeps what it had queued until Close.
		fmt.Fprintf(cmd.ErrOrStderr(), "skb: pktgen: warning: %d of the %d packets queued %s neither sent nor counted as errors: still in the device when the run ended\n", r.Queued-done, r.Queued, plural(int(r.Queued-done), "was", "were"))
	}
	// The connected socket's refusals (ECONNREFUSED, from the ICMP port
	// unreachable its earlier datagrams met) say for sure that the
	// destination turned datagrams away: that is the run's error, in one
	// line. The namespace's ICMP counter (several flows, no connected
	// socket to tell) counts other programs' messages too: a warning.
	refused := runErr == nil && r.Packets > 0 && errors.Is(r.FirstErr, syscall.ECONNREFUSED)
	// A refusal of the last datagrams, which no later send reported,
	// waits in the connected socket (-n 1 to a closed port).
	late := false
	if ud, ok := dev.(*udp.Device); ok && o.flows == 1 && runErr == nil && r.Packets > 0 && !refused {
		late = errors.Is(ud.PendingError(), syscall.ECONNREFUSED)
		refused = late
	}
	if runErr == nil && r.Packets > 0 && r.FirstErr != nil && !refused {
		fmt.Fprintf(cmd.ErrOrStderr(), "skb: pktgen: warning: %d %s not sent; the first error: %v\n", r.Errors, plural(int(r.Errors), "packet", "packets"), r.FirstErr)
	}
	if icmp > 0 && !refused {
		fmt.Fprintf(cmd.ErrOrStderr(), "skb: pktgen: warning: %d ICMP destination unreachable %s reached this network namespace during the run (any program's, not only pktgen's): is the destination up, and does something listen on every flow's port (%d to %d)? A sink counts loss only on the ports it listens on\n",
			icmp, plural(int(icmp), "message", "messages"), dst.Port(), int(dst.Port())+o.flows-1)
	}
	var refusal string
	if refused {
		how := fmt.Sprintf("; %d of %d sends failed, the first with %v", r.Errors, r.Packets+r.Errors, syscall.ECONNREFUSED)
		if late {
			how = fmt.Sprintf(" for the last sent, which no later send reported: the socket's pending %v", syscall.ECONNREFUSED)
		}
		refusal = fmt.Sprintf("%v refused the datagrams (ICMP port unreachable%s): does a sink listen there, for the whole run? The result line is what was sent", dst, how)
		if sc.signal() != 0 {
			// The signal is the run's end, said last: the refusal
			// is a warning before it.
			fmt.Fprintf(cmd.ErrOrStderr(), "skb: pktgen: warning: %s\n", refusal)
			refused = false
		}
	}
	// The run's error, which the result carries in "error" as the
	// command's error line says it, without its "skb: " prefix.
	var fail error
	switch {
	case runErr != nil:
		fail = fmt.Errorf("pktgen: %w", runErr)
	case refused:
		fail = errors.New("pktgen: " + refusal)
	case r.Packets == 0 && r.FirstErr != nil:
		fail = fmt.Errorf("pktgen: no packet sent: %w", r.FirstErr)
	}
	if fail != nil {
		j.Error = fail.Error()
	}
	p.line(fmt.Sprintf("sent %d packets, %d bytes in %.2f seconds = %.0f pps, %.2f Mbit/sec%s; %d errors, %d doorbells",
		r.Packets, r.Bytes, r.Seconds, r.PPS, r.Mbps, frameRate(r.FrameBytes, r.FrameMbps), r.Errors, r.Doorbells), j)
	switch {
	case fail != nil:
		return fail
	case p.err() != nil:
		return fmt.Errorf("pktgen: %w", p.err())
	}
	return sc.interrupted("pktgen")
}

// sendsToSelf reports whether a socket bound to src would be among the
// destinations of flows flows from dst: its port one of dst's flows' ports,
// and its address dst's, or the unspecified address while dst is a
// loopback one.
func sendsToSelf(src, dst netip.AddrPort, flows int) bool {
	p := int(src.Port())
	if p == 0 || p < int(dst.Port()) || p >= int(dst.Port())+flows {
		return false
	}
	a, d := src.Addr().Unmap(), dst.Addr().Unmap()
	return a == d || a.IsUnspecified() && d.IsLoopback()
}

// largest returns the largest UDP payload a run sends, in bytes, and how
// the flags name it ("--size 2000", "--imix size 9000"): size, or the
// largest of mix when there is one.
func largest(size int, mix []traffic.IMIXEntry) (string, int) {
	if mix == nil {
		return fmt.Sprintf("--size %d", size), size
	}
	size = 0
	for _, e := range mix {
		size = max(size, e.Size)
	}
	return fmt.Sprintf("--imix size %d", size), size
}

// fragmentWarning returns the warning of command what (pktgen, pingpong)
// sending UDP whose largest datagram (size, or the largest of mix when
// there is one) does not fit the MTU of the route from src to dst with its
// IP and UDP headers, or "". The kernel sends such a datagram as IP
// fragments: a UDP receiver reassembles them, but a link-layer receiver
// sees fragments: a sink does not count them (and reports their datagrams
// lost), a ping-pong server does not answer them.
func fragmentWarning(what string, size int, mix []traffic.IMIXEntry, src, dst netip.AddrPort) string {
	if len(mix) > 0 {
		size = 0
	}
	for _, e := range mix {
		size = max(size, e.Size)
	}
	mtu, err := pathMTU(src.Addr(), dst)
	if err != nil || mtu <= 0 {
		return ""
	}
	hdr, fam := 20+8, "IPv4"
	if dst.Addr().Is6() && !dst.Addr().Is4In6() {
		hdr, fam = 40+8, "IPv6"
	}
	if size+hdr <= mtu {
		return ""
	}
	peer := "a link-layer sink does not count"
	if what == "pingpong" {
		peer = "a link-layer server does not answer"
	}
	return fmt.Sprintf("skb: %s: warning: %d-byte datagrams take %d bytes over %s, more than the MTU of %d bytes on the route to %v: the kernel sends each as IP fragments, which %s (datagrams of up to %d bytes fit)",
		what, size, size+hdr, fam, mtu, dst.Addr(), peer, mtu-hdr)
}
