package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skbdev/skb/driver/afpacket"
	"github.com/skbdev/skb/driver/afxdp"
	"github.com/skbdev/skb/driver/memring"
	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	skbuf "github.com/skbdev/skb/skb"
)

// Default ports of the traffic commands: those of the C reference tools
// (udp_send and udp_recv use 9000, pingpong 9100), so that either end can be
// swapped for its reference.
const (
	defaultPort     = 9000
	defaultPingPort = 9100
)

// Device kinds --dev names.
const (
	devUDP      = "udp"
	devAFPacket = "afpacket"
	devAFXDP    = "afxdp"
	devMemring  = "memring"
)

// The devices each command's --dev takes, for its error message.
const (
	devKinds        = "udp, afpacket:IFNAME or afxdp:IFNAME[:QUEUE]"
	devKindsMemring = "udp, afpacket:IFNAME, afxdp:IFNAME[:QUEUE] or memring"
)

const devHelp = `device: udp (a UDP socket, the default), afpacket:IFNAME (AF_PACKET on an
interface), afxdp:IFNAME[:QUEUE] (AF_XDP on one queue, 0 by default)`

// devFlags are the flags pktgen, sink and pingpong share.
type devFlags struct {
	dev      string
	dstMAC   string
	src      string
	allowAny bool
	asJSON   bool
	profile  string
}

func addDevFlags(cmd *cobra.Command, f *devFlags, devExtra string) {
	fs := cmd.Flags()
	fs.StringVar(&f.dev, "dev", devUDP, devHelp+devExtra)
	fs.BoolVar(&f.asJSON, "json", false, "print NDJSON: an object per interval, then one with \"type\":\"result\" (\"stopped\" true and \"signal\" when a signal ended the run)")
	fs.StringVar(&f.profile, "cpuprofile", "", "write a CPU profile of the run to FILE (for go tool pprof)")
}

// startProfile starts the CPU profile --cpuprofile asks for and returns
// the function that stops it. The profile is written as the run ends,
// after the result: a write or close that fails then (a full disk) is
// reported on standard error as a warning that the profile is incomplete.
func startProfile(f *devFlags) (func(), error) {
	if f.profile == "" {
		return func() {}, nil
	}
	out, err := os.Create(f.profile)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	w := &firstErrWriter{w: out} // runtime/pprof does not return its write errors
	if err := pprof.StartCPUProfile(w); err != nil {
		out.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := errors.Join(w.err, out.Close()); err != nil {
			fmt.Fprintf(os.Stderr, "skb: warning: --cpuprofile %s: %v: the profile is incomplete\n", f.profile, err)
		}
	}, nil
}

// addSenderFlags adds the flags of commands that address packets.
func addSenderFlags(cmd *cobra.Command, f *devFlags) {
	fs := cmd.Flags()
	fs.StringVar(&f.dstMAC, "dst-mac", "", "link-layer devices: the destination MAC (default: the next hop's, from the kernel's neighbour table)")
	fs.StringVar(&f.src, "src", "", "source ADDR[:PORT] (udp: the address to bind, default the kernel's choice; link-layer: written into each frame as given, any address, not checked against the interface; default the interface's first address and the destination port)")
	fs.BoolVar(&f.allowAny, "allow-any-dst", false, allowAnyHelp)
}

// changedFlags returns those of names that the command line gave.
func changedFlags(cmd *cobra.Command, names []string) []string {
	var given []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			given = append(given, n)
		}
	}
	return given
}

// flagList names flags for a message: "--a", "--a and --b", "--a, --b and
// --c", with conj ("and", "or") before the last.
func flagList(names []string, conj string) string {
	var list string
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			list += " " + conj + " "
		default:
			list += ", "
		}
		list += "--" + n
	}
	return list
}

// isAre returns the verb for flagList(names, "and"): "is" for one flag,
// "are" for more.
func isAre(names []string) string {
	if len(names) == 1 {
		return "is"
	}
	return "are"
}

// checkMemringAddr refuses, on --dev memring, the flags that address
// packets (dstFlag, the destination's flag, --src, --dst-mac and
// --allow-any-dst), which it would ignore: its other end is in the
// process, not at an address.
func checkMemringAddr(cmd *cobra.Command, dstFlag string) error {
	given := changedFlags(cmd, []string{dstFlag, "src", "dst-mac", "allow-any-dst"})
	if len(given) == 0 {
		return nil
	}
	return fmt.Errorf("--dev memring takes no %s: its other end is in this process, not at an address", flagList(given, "or"))
}

// devSpec is a parsed --dev.
type devSpec struct {
	kind   string
	ifname string
	queue  int
}

func (s devSpec) link() bool { return s.kind == devAFPacket || s.kind == devAFXDP }

func (s devSpec) String() string {
	switch s.kind {
	case devAFPacket:
		return s.kind + ":" + s.ifname
	case devAFXDP:
		return fmt.Sprintf("%s:%s:%d", s.kind, s.ifname, s.queue)
	}
	return s.kind
}

// parseDev parses --dev; kinds lists what the command takes (devKinds or
// devKindsMemring), for the error message.
func parseDev(s, kinds string) (devSpec, error) {
	kind, rest, _ := strings.Cut(s, ":")
	spec := devSpec{kind: kind}
	switch kind {
	case devUDP, devMemring:
		if rest != "" {
			return spec, fmt.Errorf("--dev %s takes no interface (got %q)", kind, s)
		}
	case devAFPacket, devAFXDP:
		name, q, hasQ := strings.Cut(rest, ":")
		if name == "" {
			return spec, fmt.Errorf("--dev %s needs an interface: %s:IFNAME", kind, kind)
		}
		spec.ifname = name
		if hasQ {
			if kind != devAFXDP {
				return spec, fmt.Errorf("--dev %q: only afxdp takes a queue", s)
			}
			n, err := strconv.Atoi(q)
			if err != nil || n < 0 {
				return spec, fmt.Errorf("--dev %q: queue %q is not a number (0 or more)", s, q)
			}
			spec.queue = n
		}
	default:
		return spec, fmt.Errorf("--dev %q: want %s", s, kinds)
	}
	return spec, nil
}

// parseAddrPort parses an IP:PORT flag value ("localhost" is 127.0.0.1).
// The address is unmapped from IPv4-in-IPv6. A port outside portRange(flag)
// (0 for a destination) is refused as one that is not a number, the value
// quoted as given, as every other value it cannot take.
func parseAddrPort(flag, s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		want := "IP:PORT"
		if flag == "src" {
			want = "IP or IP:PORT" // parseSrc takes an address alone
		}
		return netip.AddrPort{}, fmt.Errorf("--%s %q: want %s, such as 127.0.0.1:%d or [::1]:%d", flag, s, want, defaultPort, defaultPort)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	a, err := netip.ParseAddr(host)
	switch {
	case host == "" && kernelPicksPort(flag):
		return netip.AddrPort{}, fmt.Errorf("--%s %q: no address before the port: give one of this host's, such as 127.0.0.1:%s, or 0.0.0.0:%s or [::]:%s for all of them", flag, s, port, port, port)
	case host == "":
		return netip.AddrPort{}, fmt.Errorf("--%s %q: no address before the port: give the peer's, such as 127.0.0.1:%s or [::1]:%s", flag, s, port, port)
	case err != nil:
		return netip.AddrPort{}, fmt.Errorf("--%s %q: %q is not an IP address (no name but localhost is looked up)", flag, s, host)
	case a.Zone() != "":
		return netip.AddrPort{}, fmt.Errorf("--%s %q: addresses with a zone (%%%s) are not supported: give the address alone", flag, s, a.Zone())
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || (p == 0 && !kernelPicksPort(flag)) {
		return netip.AddrPort{}, fmt.Errorf("--%s %q: port %q is not a number from %s", flag, s, port, portRange(flag))
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
}

// portRange is the ports the flag named flag takes, for its messages:
// "0 to 65535" where 0 lets the kernel pick one (--listen, --src), "1 to
// 65535" for a destination.
func portRange(flag string) string {
	if kernelPicksPort(flag) {
		return "0 to 65535"
	}
	return "1 to 65535"
}

// kernelPicksPort reports whether the flag named flag takes port 0, for
// the kernel to pick one: --listen and --src do, a destination does not.
func kernelPicksPort(flag string) bool { return flag == "listen" || flag == "src" }

// parseSrc parses --src: ADDR or ADDR:PORT.
func parseSrc(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil && (s[0] == '[') == (s[len(s)-1] == ']') {
		// An address alone, an IPv6 one with or without brackets.
		return netip.AddrPortFrom(a.Unmap(), 0), nil
	}
	return parseAddrPort("src", s)
}

// parseDevAddr parses the --dev and the ADDR:PORT flag (named flag, with
// value addr) that every traffic command starts from; kinds lists the
// devices the command takes (devKinds or devKindsMemring), for the error
// message. The errors are parseDev's and parseAddrPort's, in that order.
func parseDevAddr(dev, kinds, flag, addr string) (devSpec, netip.AddrPort, error) {
	spec, err := parseDev(dev, kinds)
	if err != nil {
		return devSpec{}, netip.AddrPort{}, err
	}
	a, err := parseAddrPort(flag, addr)
	if err != nil {
		return devSpec{}, netip.AddrPort{}, err
	}
	return spec, a, nil
}

// Destinations the senders (pktgen, the pingpong client) send to without
// --allow-any-dst, and then only over a directly connected link: see
// checkDst.
// 198.18.0.0/15 and 2001:2::/48 are the benchmarking ranges (RFC 2544,
// RFC 5180) that labs use.
var safePrefixes = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("2001:2::/48"),
}

// guardRule ends the message of a refused destination.
const guardRule = "skb sends only to loopback or to the benchmarking ranges 198.18.0.0/15 and 2001:2::/48 on a directly connected link (a lab); pass --allow-any-dst to send there anyway"

// allowAnyHelp is the help of --allow-any-dst.
const allowAnyHelp = "send to any destination: without it, only to loopback (127.0.0.0/8, ::1) and to 198.18.0.0/15 or 2001:2::/48 when the route to it has no gateway"

func safeDst(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range safePrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// checkDst is the destination guard of the commands that send. Unless
// --allow-any-dst, dst must be loopback or in a benchmarking range, and the
// kernel's route to it must stay on a directly connected link (no gateway,
// not the default route; for a link-layer device, on spec's interface), so
// that neither a typo nor a lab address without a lab sends a flood out of
// a default route. For the udp device it also checks, with --allow-any-dst
// too, that the kernel has a route from src (the address to bind; zero or
// unspecified: the kernel's choice). It sends nothing; memring, which never
// leaves the process, passes.
func checkDst(flag string, f *devFlags, spec devSpec, src, dst netip.AddrPort) error {
	if spec.kind == devMemring {
		return nil
	}
	if !f.allowAny && !safeDst(dst.Addr()) {
		return fmt.Errorf("--%s %v is outside loopback and the benchmarking ranges: %s", flag, dst.Addr(), guardRule)
	}
	if spec.kind == devUDP {
		if err := checkRoute(flag, src, dst); err != nil {
			return err
		}
	}
	if f.allowAny {
		return nil
	}
	if spec.link() {
		if _, err := lookupLink(spec.ifname); err != nil {
			return err
		}
		return routeGuard(flag, dst.Addr(), netip.Addr{}, spec.ifname)
	}
	return routeGuard(flag, dst.Addr(), src.Addr(), "")
}

// unspecified returns 0.0.0.0 or :: for a's family.
func unspecified(a netip.Addr) netip.Addr {
	if a.Is4() {
		return netip.IPv4Unspecified()
	}
	return netip.IPv6Unspecified()
}

// checkRoute asks the kernel for a route to dst from src (a connect of a
// throwaway UDP socket, which sends nothing), so that an unreachable
// destination is one clear error before any packet.
func checkRoute(flag string, src, dst netip.AddrPort) error {
	var laddr *net.UDPAddr
	if src.Addr().IsValid() && !src.Addr().IsUnspecified() {
		laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(src.Addr(), 0))
		// A bind to the address alone tells an address that is not this
		// host's from a destination out of reach.
		c, err := net.ListenUDP("udp", laddr)
		if err != nil {
			return bindErr("", "src", netip.AddrPortFrom(src.Addr(), 0), err)
		}
		c.Close()
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(dst))
	if err != nil {
		var se *os.SyscallError
		if errors.As(err, &se) {
			err = se.Err
		}
		if laddr != nil {
			return fmt.Errorf("--%s %v is unreachable from %v: %w", flag, dst, src.Addr(), err)
		}
		return fmt.Errorf("--%s %v is unreachable: %w", flag, dst, err)
	}
	return c.Close()
}

// unicast reports whether a is an address one host answers at: not the
// unspecified address, a multicast group or IPv4's limited broadcast
// (255.255.255.255). (A subnet's broadcast address is only known from its
// route: dstGuard refuses those.)
func unicast(a netip.Addr) bool {
	a = a.Unmap()
	return !a.IsUnspecified() && !a.IsMulticast() && a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// signalHelp is what the help of every measuring command says of signals.
const signalHelp = `SIGINT (Ctrl-C) or SIGTERM ends a run early: the command prints what it
measured (with --json, a result object with "stopped": true and the signal),
then exits with status 130 or 143 (128 + the signal, as a shell reports a
command a signal ended).`

// runSignals is the context of a run that SIGINT or SIGTERM stops: the
// engines then stop, the command prints what they did, and interrupted
// returns the error that ends it with 128 + the signal.
type runSignals struct {
	context.Context
	sig  atomic.Int32
	stop func()

	// seen is the signal as the result saw it, read once (signal), so
	// that the result's "stopped" and the exit status agree.
	seen    int32
	hasSeen bool
}

// signal returns the signal that stopped the run (0: none), read once: a
// signal that comes after the result was printed does not change what the
// command reports. It is for the command's goroutine only.
func (r *runSignals) signal() int32 {
	if !r.hasSeen {
		r.seen, r.hasSeen = r.sig.Load(), true
	}
	return r.seen
}

// signalContext returns a run's context; its stop, which the caller must
// call, lets the signals kill the process again.
func signalContext() *runSignals {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	r := &runSignals{Context: ctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-ch:
			if n, ok := s.(syscall.Signal); ok {
				r.sig.Store(int32(n))
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	r.stop = func() {
		signal.Stop(ch)
		cancel()
		<-done
	}
	return r
}

// startRun starts the CPU profile --cpuprofile asks for (startProfile)
// around a measured run; sc's stop, which the caller must call, then lets
// the signals kill the process again and stops the profile. The caller
// makes sc (signalContext) before it opens its devices, so that a signal
// during that (60-100 ms for a sink on 1024 ports) stops the run rather
// than killing the command without a result, or being lost where the
// signal was ignored (SIGINT in a script's background job) until the
// handler is installed.
func startRun(f *devFlags, sc *runSignals) error {
	stopProfile, err := startProfile(f)
	if err != nil {
		return err
	}
	stopSignals := sc.stop
	sc.stop = func() {
		stopSignals()
		stopProfile()
	}
	return nil
}

// interrupted returns nil when no signal stopped the run, and otherwise an
// exitError of 128 + the signal saying so, for the command cmd, after the
// result it printed.
func (r *runSignals) interrupted(cmd string) error {
	n := r.signal()
	if n == 0 {
		return nil
	}
	return &exitError{code: 128 + int(n),
		err: fmt.Errorf("%s: stopped by %s; the result above is what was measured", cmd, signalName(syscall.Signal(n)))}
}

// stopInfo is what a result object says of a signal that ended the run
// early: "stopped" (false for a run that ended by its bounds or its
// idleness) and, when stopped, "signal" ("SIGINT" or "SIGTERM").
type stopInfo struct {
	Stopped bool   `json:"stopped"`
	Signal  string `json:"signal,omitempty"`
}

// stopped returns the stopInfo of the run so far.
func (r *runSignals) stopped() stopInfo {
	n := r.signal()
	if n == 0 {
		return stopInfo{}
	}
	return stopInfo{Stopped: true, Signal: signalName(syscall.Signal(n))}
}

// printer writes the lines of a traffic command: text, or NDJSON objects.
// It keeps the first write error (a full disk, a closed file), which the
// command returns once its result is printed: a result that could not be
// written is not a success.
type printer struct {
	w   *firstErrWriter
	enc *json.Encoder
}

func newPrinter(w io.Writer, asJSON bool) *printer {
	p := &printer{w: &firstErrWriter{w: w}}
	if asJSON {
		p.enc = json.NewEncoder(p.w)
	}
	return p
}

// err returns the first error a write of the printer met, or nil.
func (p *printer) err() error { return p.w.err }

// firstErrWriter passes writes to w and keeps the first error; after it,
// writes are dropped.
type firstErrWriter struct {
	w   io.Writer
	err error
}

func (f *firstErrWriter) Write(b []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.Write(b)
	if err != nil {
		f.err = err
	}
	return n, err
}

// line prints text, or obj as one JSON line.
func (p *printer) line(text string, obj any) {
	if p.enc != nil {
		p.enc.Encode(obj)
		return
	}
	fmt.Fprintln(p.w, text)
}

// frameRate returns the text lines' note of a link-layer device's frame
// rate, " (F Mbit/sec of frames)", or "" when no frames were counted.
func frameRate(frameBytes uint64, mbps float64) string {
	if frameBytes == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.2f Mbit/sec of frames)", mbps)
}

// us converts a duration to microseconds.
func us(d time.Duration) float64 { return float64(d) / 1e3 }

// secs formats an interval's elapsed time for the text lines.
func secs(d time.Duration) string { return fmt.Sprintf("[%5.1fs]", d.Seconds()) }

// closer is what a command closes when it is done.
type closer func() error

// memringPeer opens a memring pair and runs fn with the far end on a
// goroutine of its own until stop is called: the in-process other end of
// --dev memring.
func memringPeer(fn func(ctx context.Context, peer netdev.Device)) (netdev.Device, closer, error) {
	a, b, err := memring.NewPair(memring.Config{RingSize: 4096})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx, b)
	}()
	return a, func() error {
		cancel()
		<-done
		a.Close()
		return b.Close()
	}, nil
}

// checkMemringSize refuses, before anything is sent, payloads of size
// bytes (what names them by their flag, such as "--size 9000") longer
// than memringPeer's devices carry (memring.DefaultRxBufSize), which the
// device would refuse one by one as too big.
func checkMemringSize(what string, size int) error {
	if size <= memring.DefaultRxBufSize {
		return nil
	}
	return fmt.Errorf("%s: packet too big for the device: --dev memring carries packets of up to %d bytes", what, memring.DefaultRxBufSize)
}

// drain frees whatever peer receives until ctx is done.
func drain(ctx context.Context, peer netdev.Device) {
	c := peer.Cache()
	free := func(b *skbuf.Buff) { c.Free(b) }
	for ctx.Err() == nil {
		if n, err := peer.Poll(256, free); err != nil {
			return
		} else if n == 0 {
			peer.Wait(10 * time.Millisecond)
		}
	}
}

// linkDev opens an AF_PACKET or AF_XDP device on spec's interface; wait is
// the AF_XDP device's wait policy (afxdp.Config.Wait), unused on AF_PACKET:
// afxdp.WaitSleep for a receiver that takes traffic in bulk (a sink),
// afxdp.WaitPoll for one packet in flight (pingpong), afxdp.WaitSpin for
// busy polling. It looks the interface up first (lookupLink), so that a
// missing one, or one without an Ethernet address, is named as such rather
// than by the driver's error.
func linkDev(spec devSpec, cfg netdev.Config, txOnly bool, wait afxdp.WaitPolicy) (netdev.Device, error) {
	if !spec.link() {
		return nil, fmt.Errorf("--dev %v is not a link-layer device", spec)
	}
	l, err := lookupLink(spec.ifname)
	if err != nil {
		return nil, err
	}
	if spec.kind == devAFPacket {
		// A receiver reads the kernel's virtio header, so that a GSO
		// super-frame (a veth hands those over whole from a sender with
		// GSO) counts as the datagrams it holds.
		return afpacket.Open(afpacket.Config{Config: cfg, Ifname: spec.ifname, TxOnly: txOnly, VnetHdr: !txOnly})
	}
	if err := checkQueue(spec, l, txOnly); err != nil {
		return nil, err
	}
	return afxdp.Open(spec.ifname, spec.queue, afxdp.Config{Config: cfg, TxOnly: txOnly, Wait: wait})
}

// checkQueue refuses an afxdp queue the interface does not have, which the
// kernel's bind refuses with a bare EINVAL (xsk_bind: a socket that
// receives needs a receive queue of that number, one that sends a
// transmit queue). An interface whose counts the kernel does not give
// passes.
func checkQueue(spec devSpec, l *linkInfo, txOnly bool) error {
	n := l.txQueues
	if !txOnly {
		n = min(l.rxQueues, l.txQueues)
	}
	if n <= 0 || spec.queue < n {
		return nil
	}
	var has string
	switch {
	case txOnly:
		has = fmt.Sprintf("%d transmit queues", l.txQueues)
	case l.rxQueues == l.txQueues:
		has = fmt.Sprintf("%d queues", n)
	default:
		has = fmt.Sprintf("%d receive and %d transmit queues", l.rxQueues, l.txQueues)
	}
	if n == 1 {
		has = strings.Replace(has, "queues", "queue", 1)
	}
	return fmt.Errorf("--dev %v: %s has %s: give a queue from 0 to %d (ethtool -l %s)", spec, spec.ifname, has, n-1, spec.ifname)
}

// maxFrame returns the longest untagged frame dev sends, in bytes: MTU+14,
// so that the IP packet fits the link's MTU, and on afxdp at most a UMEM
// frame less the pool's headroom (what its Alloc keeps). It reports false
// for a device without such a limit.
func maxFrame(dev netdev.Device) (int, bool) {
	switch d := dev.(type) {
	case *afpacket.Device:
		return d.MTU() + header.EthernetHeaderLen, d.MTU() > 0
	case *afxdp.Device:
		// The driver takes MTU+18 (room for a VLAN tag), but the tool's
		// frames are untagged: their IP packet must fit the MTU.
		n := d.MTU() + header.EthernetHeaderLen
		if room, ok := frameRoom(d); ok {
			n = min(n, room)
		}
		return n, d.MTU() > 0
	}
	return 0, false
}

// rxWarnings returns the stderr lines of a link-layer receiver on dev:
// linkWarning's and rxFrameWarning's, those that apply.
func rxWarnings(cmd string, spec devSpec, dev netdev.Device) []string {
	var w []string
	for _, s := range []string{linkWarning(cmd, spec, "arrives"), rxFrameWarning(cmd, spec, dev), xdpQueueWarning(cmd, spec, dev)} {
		if s != "" {
			w = append(w, s)
		}
	}
	return w
}

// linkWarning returns the stderr line of a link-layer receiver (what
// "arrives") or sender (what "goes out") whose interface is down (no
// IFF_UP) or up without a carrier (no IFF_RUNNING: a veth whose peer is
// down, a cable out), where nothing arrives or goes out until that
// changes, or "".
func linkWarning(cmd string, spec devSpec, what string) string {
	ifi, err := net.InterfaceByName(spec.ifname)
	switch {
	case err != nil || ifi.Flags&net.FlagRunning != 0:
		return ""
	case ifi.Flags&net.FlagUp == 0:
		return fmt.Sprintf("skb: %s: warning: %s is down: nothing %s until it is up (ip link set %s up)", cmd, spec.ifname, what, spec.ifname)
	}
	return fmt.Sprintf("skb: %s: warning: %s has no carrier (a veth whose peer is down, a cable out): nothing %s until it has one", cmd, spec.ifname, what)
}

// rxFrameWarning returns the stderr line of a link-layer receiver on dev
// when the interface's MTU lets frames in that its receive buffers cannot
// hold (on afxdp, a UMEM frame less the pool's headroom): the kernel drops
// them, counted as kernel drops only. It returns "" when they fit.
func rxFrameWarning(cmd string, spec devSpec, dev netdev.Device) string {
	d, ok := dev.(*afxdp.Device)
	if !ok || d.MTU() <= 0 {
		return ""
	}
	room, ok := frameRoom(d)
	if !ok || d.MTU()+header.EthernetHeaderLen <= room {
		return ""
	}
	return fmt.Sprintf("skb: %s: warning: %s's MTU of %d bytes lets in frames of up to %d bytes, but --dev %v receives frames of up to %d: the kernel drops longer ones (kernel drops)",
		cmd, spec.ifname, d.MTU(), d.MTU()+header.EthernetHeaderLen, spec, room)
}

// xdpQueueWarning returns the stderr line of an afxdp receiver on a queue
// other than 0 of a veth whose XDP program runs in generic mode (native
// attach refused, as for an MTU above what a veth's native XDP takes):
// generic XDP on a veth sees every frame on queue 0, so that queue sees
// nothing. It returns "" otherwise.
func xdpQueueWarning(cmd string, spec devSpec, dev netdev.Device) string {
	d, ok := dev.(*afxdp.Device)
	if !ok || spec.queue == 0 || d.Mode().Attach != afxdp.AttachGeneric {
		return ""
	}
	l, err := lookupLink(spec.ifname)
	if err != nil || !l.isVeth() {
		return ""
	}
	why := ""
	if e := d.Mode().NativeErr; e != nil {
		why = fmt.Sprintf(" (native attach refused: %v)", e)
	}
	return fmt.Sprintf("skb: %s: warning: the XDP program on %s runs in generic mode%s, where a veth hands every frame to queue 0: queue %d receives nothing (use queue 0)",
		cmd, spec.ifname, why, spec.queue)
}

// frameRoom returns the longest frame an afxdp device's buffers hold: a
// UMEM frame less the pool's headroom (what its Alloc keeps), and false
// when the device has no pool or frame size to tell.
func frameRoom(d *afxdp.Device) (int, bool) {
	p := d.Pool()
	if p == nil || d.FrameSize() <= 0 {
		return 0, false
	}
	return d.FrameSize() - p.Headroom(), true
}

// checkFrameSize refuses, before a link-layer sender sends anything, UDP
// payloads of size bytes (what names them by the flag's long name, such as
// "--size 2000") in frames longer than dev sends (maxFrame), which the
// driver would refuse one by one as too big, or fail to allocate.
func checkFrameSize(what string, spec devSpec, dev netdev.Device, size int, v6 bool) error {
	limit, ok := maxFrame(dev)
	if !ok {
		return nil
	}
	hdr, fam := header.EthernetHeaderLen+header.IPv4MinHeaderLen+header.UDPHeaderLen, "IPv4"
	if v6 {
		hdr, fam = header.EthernetHeaderLen+header.IPv6HeaderLen+header.UDPHeaderLen, "IPv6"
	}
	if size+hdr <= limit {
		return nil
	}
	return fmt.Errorf("%s: packet too big for the device: --dev %v sends frames of up to %d bytes, UDP payloads of up to %d bytes over %s",
		what, spec, limit, max(limit-hdr, 0), fam)
}

// linkTarget is what a link-layer sender needs to know of its interface and
// peer: the frame template. It first guards dst, the value of the flag
// named flag, with checkDst, so that no link-layer sender skips the guard.
func linkTarget(flag string, spec devSpec, f *devFlags, dst netip.AddrPort) (*header.UDPFrame, error) {
	if err := checkDst(flag, f, spec, netip.AddrPort{}, dst); err != nil {
		return nil, err
	}
	l, err := lookupLink(spec.ifname)
	if err != nil {
		return nil, err
	}
	src, err := parseSrc(f.src)
	if err != nil {
		return nil, err
	}
	if !src.Addr().IsValid() {
		a, err := l.source(dst.Addr())
		if err != nil {
			return nil, err
		}
		src = netip.AddrPortFrom(a, src.Port())
	} else if src.Addr().Is4() != dst.Addr().Is4() {
		return nil, fmt.Errorf("--src %v and the destination %v are of different families", src.Addr(), dst.Addr())
	}
	if src.Port() == 0 {
		src = netip.AddrPortFrom(src.Addr(), dst.Port())
	}
	var mac header.MAC
	if f.dstMAC != "" {
		if mac, err = dstMAC(f); err != nil {
			return nil, err
		}
		if mac == l.mac {
			// A frame to its own sender's address leaves on the wire
			// (veth gives it to the peer, which drops it as another
			// station's): nothing would receive it.
			return nil, fmt.Errorf("--dst-mac %s is %s's own address: give the destination's (ip neigh, or the peer's `ip link`)", mac, spec.ifname)
		}
	} else if mac, err = l.neighbour(dst.Addr()); err != nil {
		return nil, err
	}
	return &header.UDPFrame{
		Source: l.mac, Destination: mac,
		SourceIP: src.Addr(), DestinationIP: dst.Addr(),
		SourcePort: src.Port(), DestinationPort: dst.Port(),
		DontFragment: true,
	}, nil
}

// dstMAC parses --dst-mac (given: f.dstMAC is not empty). Without
// --allow-any-dst it must be one station's: a group address (its first
// octet odd: broadcast, multicast) reaches every host on the link, not the
// one destination the address guard checked, and all zeros is no
// station's. The commands check it with their other flags, before they
// open a device.
func dstMAC(f *devFlags) (header.MAC, error) {
	hw, err := net.ParseMAC(f.dstMAC)
	if err != nil || len(hw) != 6 {
		return header.MAC{}, fmt.Errorf("--dst-mac %q is not a MAC address such as 02:00:c6:12:00:02", f.dstMAC)
	}
	if (hw[0]&1 != 0 || [6]byte(hw) == [6]byte{}) && !f.allowAny {
		return header.MAC{}, fmt.Errorf("--dst-mac %s is not one station's address (a broadcast, multicast or zero MAC): give a unicast MAC, or --allow-any-dst", hw)
	}
	return header.MAC(hw), nil
}

// holdPorts binds plain UDP sockets to ports PORT to PORT+n-1 of a, which
// are never read, for a link-layer sink or server, or for the source port of
// a link-layer ping-pong client: the frames it takes from
// the interface also reach the kernel's stack (AF_PACKET sees copies), which
// would answer each with an ICMP port unreachable, and a connected sender
// would then fail with ECONNREFUSED. A bound socket keeps the kernel quiet;
// with the smallest receive buffer it queues a few datagrams and drops the
// rest. Addresses that cannot be bound (not local) are skipped.
func holdPorts(a netip.AddrPort, n int) closer {
	var conns []*net.UDPConn
	for i := range n {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(a.Addr(), a.Port()+uint16(i))))
		if err != nil {
			continue
		}
		c.SetReadBuffer(1)
		conns = append(conns, c)
	}
	return func() error {
		for _, c := range conns {
			c.Close()
		}
		return nil
	}
}
