package traffic

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Defaults of the receiving engines.
const (
	// DefaultBudget is the packets one Poll may hand over: the drivers'
	// receive batch.
	DefaultBudget = netdev.DefaultBatch
	// DefaultSinkDuration bounds a Sink or Echo run when the config gives
	// no duration: twice DefaultDuration, so that a sink started first
	// sees the whole of a default generator run.
	DefaultSinkDuration = 2 * DefaultDuration
	// DefaultIdle is how long a sink waits, once traffic was seen, for
	// more before it stops.
	DefaultIdle = time.Second
	// DefaultSinkSleep is the Sleep skb sink uses unless told otherwise,
	// in ns. Measured on loopback (64-byte datagrams from pktgen, sender
	// and sink pinned to two CPUs, medians of 8 alternating runs) against
	// waiting to be woken, it raised the rate by a fifth (1.23x at burst 1,
	// 1.20x at burst 64) and cut the sink's CPU per packet by 40%: a sender
	// whose receiver is not asleep does no wake-up work. The C reference's
	// AF_XDP receiver sleeps 50 µs the same way.
	DefaultSinkSleep = 50 * time.Microsecond
	// SleepSpan is how long after its last packet a sink with
	// SinkConfig.Sleep keeps sleeping between polls before it waits to be
	// woken again.
	SleepSpan = time.Millisecond
	// waitSlice is the longest a receiving engine sleeps in Wait before it
	// looks at its clock (bounds, interval, context). It is constant so
	// that a driver which sets a socket timeout per value (driver/udp) sets
	// it once.
	waitSlice = 20 * time.Millisecond
)

// SinkConfig configures a Sink. The zero value polls 64 packets at a time,
// sleeps in Wait between empty polls, and stops after DefaultSinkDuration
// or after DefaultIdle without traffic once traffic was seen.
type SinkConfig struct {
	// Budget is the most packets one Poll hands over; 0 means
	// DefaultBudget.
	Budget int

	// Spin polls again at once after an empty Poll instead of sleeping in
	// the device's Wait: lower latency, one core busy all the time. A
	// sink alone (not one of several run together) on a device that
	// busy-polls itself (netdev.BusyPoller: the UDP driver) spins in its
	// BusyPoll, 50 µs at a time (on the process's one P, one round of
	// probes, after which it yields the P), as the echo server does.
	Spin bool

	// Sleep, when positive, sleeps this long after an empty Poll instead
	// of waiting in the device's Wait, as long as traffic flows (a packet
	// came in the last SleepSpan): the sink is then not woken by the
	// kernel, so the sender's CPU does no wake-up work per packet (on
	// loopback it also does the receiver's softirq work), at the price of
	// up to Sleep of latency. Idle for longer, the sink waits in Wait
	// again, as NAPI goes back to interrupts. Ignored with Spin.
	Sleep time.Duration

	// Duration bounds the run (0 means DefaultSinkDuration); Idle stops it
	// after this long without a packet once one was seen (0 means
	// DefaultIdle, negative never), a packet being one the sink counts:
	// the frames a link-layer sink counts in Other (ARP, neighbour
	// discovery, another port's) neither start it nor the result's span;
	// Count stops it after this many packets (0: no limit). Count is
	// exact: each Poll's budget is cut to the packets Count still allows,
	// so the rest stay queued in the device, and a GSO buffer that
	// crosses it counts its datagrams up to Count (the rest are freed
	// uncounted; its FrameBytes count whole), as are the buffers after it
	// in the same Poll.
	Duration time.Duration
	Idle     time.Duration
	Count    uint64

	// Link says the device hands over Ethernet frames (afpacket, afxdp):
	// each is parsed, and only UDP datagrams to ports Port to Port+Ports-1
	// (any port when Port is 0; Ports 0 means 1, a generator's flows need
	// more) are counted; other frames, IP fragments among them, are
	// counted in Other and freed. Otherwise every packet is a UDP payload
	// and counts. A GSO super-frame (a veth hands those over whole from a
	// sender with GSO) counts as its datagrams on a GSOFramer that says it
	// describes them (afpacket opened with Config.VnetHdr); elsewhere it
	// counts as one, and the others show as lost. Addr, when valid, also
	// limits the count to datagrams whose IP destination is Addr (IPv4 or
	// IPv6, compared unmapped); others count in Other. So do frames whose
	// checksums fail, as the kernel drops them, since a stamp in a corrupt
	// frame is not to be trusted: the IPv4 header's checksum always, and
	// on a ChecksumStater the UDP checksum of a frame the device left
	// CHECKSUM_NONE (neither verified nor still to be computed). So do
	// frames the host's stack would not take in: to another station's MAC
	// (on a device that reports its own), VLAN-tagged, or with IPv6
	// extension headers the kernel would drop the packet for with its
	// default settings (options to discard, more than 8 of them, a
	// Routing header it would route on, an Authentication header).
	Link  bool
	Port  uint16
	Ports int
	Addr  netip.Addr

	// OnInterval, when set, is called on the sink's goroutine at the end
	// of each Interval (0 means DefaultInterval) of the run: at the first
	// check of the clock at or after each multiple of Interval from the
	// start, so the ticks do not drift; the clock is checked after every
	// poll (every 64th empty one with Spin) and at least every 20 ms while
	// waiting. A tick later than a
	// whole Interval is not made up: its SinkInterval covers the time
	// since the one before, as its Elapsed and Seconds say. The run's
	// last interval, up to its end, is reported too: a whole one always,
	// a part one when it counted a packet, a loss, a reordering or a
	// kernel drop (the quiet tail of a run that ended idle is not), so
	// that the intervals' Packets add up to the result's. RunSinks adds
	// up its sinks' intervals: see there.
	OnInterval func(SinkInterval)
	Interval   time.Duration

	// Thread runs each of RunSinks' polling goroutines (one per device,
	// or per share of the devices when there are more than SoloSinks) on
	// an OS thread of its own with a private descriptor
	// table (netdev.RunOnThread), so that its system calls on the devices
	// skip the file reference a table shared between threads costs; where
	// that is refused, on a goroutine as without it. Sink.Run itself runs
	// on its caller's goroutine either way.
	Thread bool
}

// SinkInterval is what one interval of a sink run received.
type SinkInterval struct {
	Elapsed     time.Duration // from the start of the run to the end of the interval
	Seconds     float64       // length of the interval
	Packets     uint64
	Bytes       uint64 // UDP payload bytes
	FrameBytes  uint64 // whole frames on a link-layer device; 0 otherwise
	PPS         float64
	Mbps        float64
	FrameMbps   float64
	Lost        uint64 // growth of the lost count (it shrinks when late packets arrive: then 0)
	Reordered   uint64
	KernelDrops uint64 // rx_dropped_kernel
}

// SinkResult is what a sink counted. Packets counts datagrams (each segment
// of a GRO train or GSO buffer, as the device hands them over) or, on a
// link-layer device, UDP frames to the port; Bytes counts their UDP
// payloads on every device, and FrameBytes, on a link-layer device only,
// the whole frames as received (a GSO super-frame once, with one set of
// headers).
type SinkResult struct {
	Packets    uint64
	Bytes      uint64
	FrameBytes uint64
	// Seconds is the time from the first packet to the last, in seconds:
	// from the hand-over of the first to the end of the Poll that handed
	// over the last (so packets that all came in one Poll have one too),
	// 0 with fewer than two packets. PPS, Mbps (of Bytes) and FrameMbps
	// (of FrameBytes) are over it, as the C reference receiver measures,
	// and 0 when it is.
	Seconds   float64
	PPS       float64
	Mbps      float64
	FrameMbps float64

	// Lost, Reordered and Duplicates come from the stamps (see
	// FlowTotals); Unstamped counts packets without a usable stamp (none,
	// one whose check fails (ParseStamp), or one FlowTotals leaves
	// untracked: a flow number of MaxFlows or
	// more, a sequence number MaxSeqAhead ahead of its flow's that the
	// flow's next stamps do not follow, another flow than its run's on a
	// port of a multi-port sink, a (run, flow) without room beside the
	// flow table), which count in Packets only. Flows counts the flows
	// seen.
	Lost       uint64
	Reordered  uint64
	Duplicates uint64
	Unstamped  uint64
	Flows      int

	// Other counts frames a link-layer sink did not count: not UDP, not to
	// its port, IP fragments, not parsable, failing a checksum, or not for
	// this host (see SinkConfig.Link).
	Other uint64

	// KernelDrops is the growth of rx_dropped_kernel: datagrams or frames
	// the kernel dropped before the device saw them (a full socket buffer
	// or ring). Dropped is that of all rx_dropped reasons, and Copybreak
	// that of rx_copybreak.
	KernelDrops uint64
	Dropped     uint64
	Copybreak   uint64

	// Latency is the one-way delay from each stamp's send time to the
	// Poll that handed the packet over (on one host, or hosts whose
	// clocks agree; a negative one counts as 0). A stamp whose send time is
	// MaxLatency or more away from the receipt (forged, or from a clock
	// far off) counts in Packets and in the flow's sequence, not here.
	Latency Latency
}

// MaxLatency bounds the one-way delays a sink records: a stamp whose send
// time is this far or further from its receipt, either way, is not timed.
const MaxLatency = time.Minute

// Sink counts what a device receives. It belongs to one goroutine, the
// device's. Make one with NewSink, then Run it, or call Poll in a loop of
// your own and read Result.
type Sink struct {
	dev     netdev.Device
	cache   *pool.Cache
	cfg     SinkConfig
	budget  int
	dur     time.Duration
	idle    time.Duration
	every   time.Duration
	ports   int
	handler netdev.Handler
	linkGSO bool // a link-layer device that hands over GSO super-frames (GSOFramer)
	// csumStates: a link-layer device that sets checksum states
	// (ChecksumStater): a CHECKSUM_NONE frame's UDP checksum is verified.
	csumStates bool
	// mac is the link-layer device's address, when it reports one
	// (macOK): frames to another station count as other.
	mac   header.MAC
	macOK bool

	cnt     Counter
	ageAt   time.Duration // when the Counter next ages (Age, every second)
	lat     Histogram
	packets uint64
	limit   uint64 // packets may not pass it: Count or MaxUint64 (without quota)
	quota   *quota // set by RunSinks with a Count: the group's packets left
	bytes   uint64 // UDP payloads
	frames  uint64 // frame bytes (link-layer)
	other   uint64
	nostamp uint64
	scratch [StampLen]byte
	frame   header.Frame // the frame being counted, parsed in place

	clk clock
	now time.Duration // clock of the current Poll, read at its first packet
	// counted says whether the last Poll counted a packet (it may have
	// handed over only frames counted in Other).
	counted bool
	nowOK   bool

	seen        bool
	first, last time.Duration
	st0         netdev.Stats

	start    time.Duration
	lastTick time.Duration
	lastPkts uint64
	lastByte uint64
	lastFrm  uint64
	lastLost uint64
	lastReor uint64
	lastKern uint64
}

// NewSink checks cfg and prepares a sink over dev; the device's counters
// are read now, as the base of the result's. It returns an error wrapping
// ErrConfig for an invalid config.
func NewSink(dev netdev.Device, cfg SinkConfig) (*Sink, error) {
	cfg.Addr = cfg.Addr.Unmap()
	s := &Sink{dev: dev, cache: dev.Cache(), cfg: cfg}
	s.budget = cmp0(cfg.Budget, DefaultBudget)
	s.dur = cmp0(cfg.Duration, DefaultSinkDuration)
	s.idle = cmp0(cfg.Idle, DefaultIdle)
	s.every = cmp0(cfg.Interval, DefaultInterval)
	s.ports = cmp0(cfg.Ports, 1)
	s.limit = math.MaxUint64
	if cfg.Count > 0 {
		s.limit = cfg.Count
	}
	switch {
	case s.ports < 1 || int(cfg.Port)+s.ports-1 > 0xffff:
		return nil, fmt.Errorf("traffic: sink: %w: ports %d to %d", ErrConfig, cfg.Port, int(cfg.Port)+s.ports-1)
	case s.budget < 1:
		return nil, fmt.Errorf("traffic: sink: %w: budget %d", ErrConfig, cfg.Budget)
	case cfg.Sleep < 0:
		return nil, fmt.Errorf("traffic: sink: %w: sleep %v is negative", ErrConfig, cfg.Sleep)
	case s.dur < 0:
		return nil, fmt.Errorf("traffic: sink: %w: duration %v is negative", ErrConfig, cfg.Duration)
	case s.every < 0:
		return nil, fmt.Errorf("traffic: sink: %w: interval %v is negative", ErrConfig, cfg.Interval)
	}
	if g, ok := dev.(GSOFramer); ok {
		s.linkGSO = g.GSOFrames()
	}
	if c, ok := dev.(ChecksumStater); ok {
		s.csumStates = c.ChecksumStates()
	}
	s.mac, s.macOK = deviceMAC(dev)
	s.handler = s.handle
	s.clk = newClock()
	s.st0 = dev.Stats()
	return s, nil
}

// Poll calls the device's Poll once with the sink's budget, cut to the
// packets Count still allows (in RunSinks, that the group's Count still
// allows all its sinks), counting every packet it hands over and freeing
// it, and returns how many it handed over. When Count allows none it
// returns 0 without polling. It allocates nothing.
func (s *Sink) Poll() (int, error) { return s.poll(nil, 0) }

// poll is Poll, through bp's BusyPoll (slice at most) when bp is not nil:
// the spinning run of a sink alone on a device that busy-polls itself.
func (s *Sink) poll(bp netdev.BusyPoller, slice time.Duration) (int, error) {
	left := s.limit - min(s.packets, s.limit)
	if s.quota != nil {
		left = s.quota.left.Load()
	}
	budget := int(min(uint64(s.budget), left))
	if budget == 0 {
		return 0, nil
	}
	s.nowOK = false
	p0 := s.packets
	var n int
	var err error
	if bp != nil {
		n, err = bp.BusyPoll(budget, s.handler, slice)
	} else {
		n, err = s.dev.Poll(budget, s.handler)
	}
	// Packets counted, not the frames a link-layer sink counts in Other
	// (ARP, neighbour discovery, another port's), start the span and the
	// idle time.
	s.counted = s.packets != p0
	switch {
	case !s.counted:
	case n == 1 && s.seen && s.nowOK:
		// The span ends at this Poll's one packet, whose time the
		// handler read: one read of the clock per datagram, not two,
		// when traffic comes one datagram per wake-up.
		s.last = s.now
	default:
		if !s.seen {
			s.seen, s.first = true, s.now
		}
		// The span ends with this Poll, not at its first packet: a run
		// whose packets all came in one Poll has a span too.
		s.last = s.clk.now()
	}
	return n, err
}

// badChecksum reports whether the frame b, parsed into f, fails its IPv4
// header checksum, or, when states (the device is a ChecksumStater) and b
// is CHECKSUM_NONE, its UDP checksum; see SinkConfig.Link.
func badChecksum(b *skb.Buff, f *header.Frame, states bool) bool {
	if states && b.IPSummed() == skb.ChecksumNone {
		return f.VerifyChecksumBuff(b) != nil
	}
	return f.EtherType == header.EtherTypeIPv4 && !header.IPv4(b.Data()[f.NetworkOffset:]).ChecksumValid()
}

func (s *Sink) clock() time.Duration {
	if !s.nowOK {
		s.now, s.nowOK = s.clk.now(), true
	}
	return s.now
}

func (s *Sink) handle(b *skb.Buff) {
	now := s.clock()
	n := b.Len()
	off := 0 // of the UDP payload in b
	plen := n
	if s.cfg.Link {
		data := b.Data()
		f := &s.frame
		err := header.ParseFrameInto(data, f)
		if err != nil || f.PayloadOffset == 0 || f.Protocol != header.IPProtoUDP || f.Fragment || !toHost(data, f, s.mac, s.macOK, true) || !ipv6OptionsOK(data, f) {
			s.other++
			s.cache.Free(b)
			return
		}
		u := header.UDP(data[f.TransportOffset:])
		if p := u.DestinationPort(); s.cfg.Port != 0 && (p < s.cfg.Port || int(p-s.cfg.Port) >= s.ports) ||
			s.cfg.Addr.IsValid() && frameDst(data, f) != s.cfg.Addr {
			s.other++
			s.cache.Free(b)
			return
		}
		if badChecksum(b, f, s.csumStates) {
			s.other++
			s.cache.Free(b)
			return
		}
		off = f.PayloadOffset
		plen = max(0, min(int(u.Length())-header.UDPHeaderLen, n-off))
		s.frames += uint64(n)
	}
	if g := s.gsoSize(b); g > 0 && plen > g {
		// A GSO buffer handed over unsegmented (a link-layer GSOFramer's
		// super-frame, or a datagram device or wrapper that keeps the GSO
		// fields): count its datagrams, up to the limit (Poll's budget
		// counts buffers, not datagrams); in a group, as many as the
		// group's quota still holds.
		k := (plen + g - 1) / g
		if s.quota != nil {
			k = int(s.quota.take(uint64(k)))
		} else {
			k = int(min(uint64(k), s.limit-min(s.packets, s.limit)))
		}
		for o := 0; o < k*g; o += g {
			s.count(b, off+o, min(g, plen-o), now)
		}
	} else if s.quota == nil && s.packets < s.limit || s.quota != nil && s.quota.take(1) == 1 {
		s.count(b, off, plen, now)
	}
	s.cache.Free(b)
}

// gsoSize returns b's GSO size, or 0 on a link-layer device that delivers
// frames as they were on the wire (one that is no GSOFramer, or has that
// off): reading it there would cost a cache line of b's shared info per
// frame that nothing else on the receive path touches.
func (s *Sink) gsoSize(b *skb.Buff) int {
	if s.cfg.Link && !s.linkGSO {
		return 0
	}
	return b.GSOSize()
}

// count counts the datagram of l bytes at offset off of b.
func (s *Sink) count(b *skb.Buff, off, l int, now time.Duration) {
	s.packets++
	s.bytes += uint64(l)
	if l < StampLen {
		s.nostamp++
		return
	}
	var st Stamp
	var ok bool
	if d := b.Data(); off+StampLen <= len(d) {
		st, ok = ParseStamp(d[off:])
	} else if b.CopyBits(off, s.scratch[:]) == nil {
		st, ok = ParseStamp(s.scratch[:])
	}
	if !ok {
		s.nostamp++
		return
	}
	if now >= s.ageAt {
		// A run a second quiet gives way to the next (Counter.Age).
		s.cnt.Age()
		s.ageAt = now + time.Second
	}
	s.cnt.Add(st)
	// A send time more than MaxLatency away from the receipt is a stamp
	// the wire made up, not a delay: it is counted, not timed; so is one
	// with no send time (0, PktgenConfig.NoTimestamp).
	if d := s.clk.wall(now) - st.Tstamp; st.Tstamp != 0 && d > -int64(MaxLatency) && d < int64(MaxLatency) {
		s.lat.Record(time.Duration(d))
	}
}

// Run polls until the duration passes, the count is reached, the link
// has been idle for Idle after traffic, or ctx is done, and returns the
// result. Between empty polls it sleeps in the device's Wait, unless
// Spin. The error is nil when the run ended by its bounds or ctx, or the
// device's error (netdev.ErrClosed when it was closed under the run); the
// result holds what was counted either way.
func (s *Sink) Run(ctx context.Context) (SinkResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	start := s.clk.now()
	r := runner{sinks: []*Sink{s}, cfg: s.cfg, idle: s.idle, every: s.every}
	r.init(start, start+s.dur)
	r.run(ctx.Done())
	return s.Result(), r.errs[0]
}

// interval returns what the sink received since its last interval, which
// ends now, and starts the next.
func (s *Sink) interval(now time.Duration) SinkInterval {
	t := s.cnt.Totals()
	kern := s.dev.Stats().Sub(s.st0).RxDropped[netdev.DropKernel]
	iv := SinkInterval{
		Elapsed:     now - s.start,
		Seconds:     (now - s.lastTick).Seconds(),
		Packets:     s.packets - s.lastPkts,
		Bytes:       s.bytes - s.lastByte,
		FrameBytes:  s.frames - s.lastFrm,
		Reordered:   t.Reordered - s.lastReor,
		KernelDrops: kern - s.lastKern,
	}
	if t.Lost > s.lastLost {
		iv.Lost = t.Lost - s.lastLost
	}
	iv.PPS, iv.Mbps = rates(iv.Packets, iv.Bytes, iv.Seconds)
	_, iv.FrameMbps = rates(iv.Packets, iv.FrameBytes, iv.Seconds)
	s.lastTick, s.lastPkts, s.lastByte, s.lastFrm = now, s.packets, s.bytes, s.frames
	s.lastLost, s.lastReor, s.lastKern = t.Lost, t.Reordered, kern
	return iv
}

// Result returns what the sink counted so far, with the growth of the
// device's counters since NewSink.
func (s *Sink) Result() SinkResult {
	t := s.cnt.Totals()
	st := s.dev.Stats().Sub(s.st0)
	r := SinkResult{
		Packets:     s.packets,
		Bytes:       s.bytes,
		FrameBytes:  s.frames,
		Lost:        t.Lost,
		Reordered:   t.Reordered,
		Duplicates:  t.Duplicates,
		Unstamped:   s.nostamp + t.Untracked,
		Flows:       t.Flows,
		Other:       s.other,
		KernelDrops: st.RxDropped[netdev.DropKernel],
		Dropped:     st.RxDroppedTotal(),
		Copybreak:   st.RxCopybreak,
		Latency:     s.lat.Summary(),
	}
	if s.seen && s.packets > 1 {
		r.Seconds = (s.last - s.first).Seconds()
	}
	r.PPS, r.Mbps = rates(r.Packets, r.Bytes, r.Seconds)
	_, r.FrameMbps = rates(r.Packets, r.FrameBytes, r.Seconds)
	return r
}
