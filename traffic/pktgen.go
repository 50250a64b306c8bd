package traffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Defaults and limits of the engines.
const (
	// DefaultSize is the payload size in bytes when none is given: 64, as
	// the C reference tools send.
	DefaultSize = 64
	// DefaultDuration bounds a Pktgen or PingPong run when the config
	// gives no duration: every run is bounded in time.
	DefaultDuration = 5 * time.Second
	// DefaultInterval is how often the interval callbacks run.
	DefaultInterval = time.Second
	// MaxFlows is the most flows a generator sends and a sink tracks: one
	// per UDP port.
	MaxFlows = 1 << 16
	// MaxBurst is the largest burst (packets per doorbell).
	MaxBurst = 1 << 12
	// MaxDatagram is the largest UDP payload the engines send to an IPv4
	// destination over a datagram device, in bytes: 65535 less the IPv4
	// and UDP headers, the most one IPv4 packet holds (RFC 791 total
	// length).
	MaxDatagram = 65535 - 20 - 8
	// MaxDatagram6 is the largest UDP payload the engines send to an
	// IPv6 destination, or to the device's own destination, over a
	// datagram device, in bytes: 65535 less the UDP header, as the IPv6
	// payload length counts the UDP header but no IP header (RFC 8200
	// section 3; no jumbograms). A device refuses a datagram longer than
	// its destination's family carries.
	MaxDatagram6 = 65535 - 8
	// failFast is how many failed sends (transmit errors and packets the
	// device dropped) in a row, with no packet going out meanwhile, end a
	// run.
	failFast = 64
	// gsoMaxSegs is the most datagrams in one GSO super-packet: the
	// kernel's UDP_MAX_SEGMENTS as UDP_SEGMENT introduced it (64, Linux
	// 4.18), which driver/udp also keeps to.
	gsoMaxSegs = 64
)

// PktgenConfig configures a packet generator. The zero value sends 64-byte
// payloads, one flow, one doorbell per packet, as fast as the device takes
// them, for DefaultDuration, to the device's own destination.
type PktgenConfig struct {
	// Dst is the destination of flow 0 on a datagram device that
	// addresses each datagram (AddrXmitter, such as *udp.Device): flow i
	// goes to port Dst.Port()+i. Zero sends with Xmit to the device's own
	// destination (a connected socket, a memring pair), where the flows
	// differ only in their stamps.
	Dst netip.AddrPort

	// Frame, for a link-layer device (afpacket, afxdp), is the template of
	// every frame: addresses, VLAN tag, TTL and ports. Flow i goes to UDP
	// port Frame.DestinationPort+i. The UDP checksum is computed (and
	// updated per packet, RFC 1624) unless Frame.NoChecksum; PartialChecksum
	// is ignored. Nil for a datagram device. Frame and Dst exclude each
	// other.
	Frame *header.UDPFrame

	// Size is the UDP payload of every packet in bytes, at least
	// StampLen and, on a datagram device, at most MaxDatagram to an IPv4
	// Dst or MaxDatagram6 otherwise; 0 means DefaultSize. IMIX, when not
	// empty, replaces it with a mix of sizes: the datagrams (frames on a
	// link-layer device) follow the weights, with GSO as without (see
	// GSO).
	Size int
	IMIX []IMIXEntry

	// Flows is the number of flows (destination ports), 1 to MaxFlows; 0
	// means 1. FlowLen is how many buffers go to a flow before the next
	// flow's turn (pktgen's flowlen): packets, or with Clone N buffers
	// each sent N times, or with GSO super-packets of up to Burst
	// datagrams; 0 means 1. Each flow numbers its packets from 0.
	Flows   int
	FlowLen int

	// Count stops the run after this many packets (datagrams or frames;
	// each segment of a GSO super-packet counts); 0 means no count limit.
	// Duration stops it after this long; 0 means DefaultDuration. The run
	// stops at whichever comes first.
	Count    uint64
	Duration time.Duration

	// Rate limits the packets per second on average (a token bucket that
	// sleeps, never spins, when ahead, ten milliseconds deep or one
	// burst's cost when that is more, up to a second: a burst goes out
	// whole, at once, then waits for its cost); 0 means no limit. A run
	// of Duration D sends at most Rate x D packets (and one): its last
	// burst is cut to what the bucket allows before D ends. A run that
	// sends its Count first lasts until the bucket has paid for the last
	// burst (Count / Rate seconds, within D): -r 10 -b 100 -n 50 takes
	// 5 s, and its result's rate is the one asked for.
	Rate float64

	// Burst is the number of packets per doorbell: Xmit(b, true) for all
	// but the last, Xmit(b, false) for the last (xmit_more, seed 002); 1
	// rings the doorbell for every packet. With GSO it is the number of
	// datagrams per super-packet instead (each super-packet one Xmit with
	// more false). 0 means 1; at most MaxBurst.
	Burst int

	// Clone sends every buffer Clone times, as clones of it (pktgen's
	// clone_skb): the clones are what Xmit takes and the driver frees, and
	// the generator frees the original after the last clone. The clones
	// carry the same stamp, so a sink counts all but the first as
	// duplicates. 0 or 1 builds a new buffer for every packet. With GSO
	// and a Count, a super-packet near the end of the run holds no more
	// datagrams than lets all its copies go out within the Count.
	Clone int

	// GSO builds UDP GSO super-packets (skb.GSOUDPL4) of Burst datagrams
	// of one size (at most 64 and 65507 bytes in all), each datagram with
	// its own stamp, for a datagram device that segments (Segmenter with
	// GSO on, such as *udp.Device opened with Config.GSO): one send
	// carries them all, as UDP_SEGMENT does. With an IMIX the datagrams
	// follow the mix as they do without GSO: the generator walks the same
	// per-datagram schedule and holds each size's datagrams back until
	// they fill a super-packet of that size (Burst of them, fewer where 64
	// datagrams or 65507 bytes bound it), so each size's count sent lags
	// the schedule's by less than one super-packet, and equals it whenever
	// nothing is held back.
	GSO bool

	// Run identifies the run in the stamps; 0 picks a random one.
	Run uint32

	// NoTimestamp leaves the send time out of every stamp (Tstamp 0, as
	// the kernel pktgen's NO_TIMESTAMP flag does): a sink still counts
	// loss, reordering and duplicates by sequence number, and times
	// nothing. It saves a read of the clock per burst, which at Burst 1
	// is a read per packet: without a Rate the run reads the clock
	// after every clockEvery (64) packets, for its bounds and
	// intervals, and after every burst once clockEvery packets took
	// longer than a millisecond (a slow or blocking device); a timer and
	// ctx's cancellation end a stretch between reads early, so a run
	// still ends within a burst of its Duration or of ctx being done.
	// With a Rate it reads the clock after every burst, for the pacing.
	NoTimestamp bool

	// OnInterval, when set, is called on the generator's goroutine every
	// Interval (0 means DefaultInterval) with what the interval sent, and
	// once more at the end for the run's last interval, whole or partial
	// (unless it is under a millisecond and sent nothing), so that the
	// intervals add up to the result.
	OnInterval func(PktgenInterval)
	Interval   time.Duration
}

// PktgenInterval is what one interval of a generator run sent, from the
// device's counters, as PktgenResult counts it.
type PktgenInterval struct {
	Elapsed    time.Duration // from the start of the run to the end of the interval
	Seconds    float64       // length of the interval
	Packets    uint64        // tx_packets
	Bytes      uint64        // UDP payload bytes
	FrameBytes uint64        // tx_bytes of a link-layer device: whole frames; 0 for a datagram device
	Errors     uint64        // tx_dropped, plus buffers the pool could not give
	Doorbells  uint64        // tx_doorbells
	PPS        float64       // Packets per second
	Mbps       float64       // Bytes as megabits (10^6 bits) per second
	FrameMbps  float64       // FrameBytes as megabits per second
}

// PktgenResult is what a generator run did. Packets, Errors and Doorbells
// are the growth of the device's counters over the run (see netdev.Stats).
// Bytes and Mbps count UDP payload bytes on every device, as the sizes do:
// a datagram device's tx_bytes, and on a link-layer device its tx_bytes
// less the headers of each frame (every frame of a run has the same
// Ethernet, IP and UDP headers), whose whole frames FrameBytes and
// FrameMbps count.
type PktgenResult struct {
	Packets    uint64  // tx_packets: sent by the device
	Bytes      uint64  // UDP payload bytes
	FrameBytes uint64  // tx_bytes of a link-layer device: whole frames; 0 for a datagram device
	Seconds    float64 // from the start to the end of the run
	PPS        float64
	Mbps       float64 // Bytes as megabits (10^6 bits) per second
	FrameMbps  float64 // FrameBytes as megabits per second
	Errors     uint64  // packets not sent: tx_dropped, plus buffers the pool could not give
	Doorbells  uint64  // tx_doorbells
	Queued     uint64  // packets handed to the device
	Flows      int

	// XmitErrors counts the transmit calls that returned an error, and
	// FirstErr is the first such error (or allocation failure), for the
	// caller to show.
	XmitErrors uint64
	FirstErr   error
}

// schedEntry is one step of the size schedule: one datagram or frame.
type schedEntry struct {
	size int
	tmpl int // frame template index (link mode)
	cls  int // index in gsoSize, gsoCap and gsoHeld (GSO mode)
}

// Pktgen is a packet generator over one device. It belongs to one
// goroutine, the device's. Make one with NewPktgen, send with Run or Burst,
// and Close it to free the buffer it keeps for cloning.
type Pktgen struct {
	cut uint64 // during Run's burst: the most packets it may send (burst reads remaining once); 0: no cut

	dev      netdev.Device
	cache    *pool.Cache
	devAlloc Allocator
	ax       AddrXmitter

	cfg      PktgenConfig
	duration time.Duration
	interval time.Duration
	burstLen int
	clone    int
	flows    int
	flowLen  int
	gso      bool
	link     bool
	run      uint32

	sched []schedEntry
	si    int
	// With GSO, per distinct size of the schedule: the size, the most
	// datagrams of that size in one super-packet, and how many the
	// schedule has reached that were not sent yet.
	gsoSize []int
	gsoCap  []int
	gsoHeld []int
	tmpls   []frameTemplate
	dsts    []netip.AddrPort // per flow (datagram mode with Dst)
	ports   []uint16         // per flow (link mode)
	seqs    []uint64         // next sequence number per flow

	flow     int
	flowLeft int

	noPlain bool // tests: send every burst through burst, not plainBursts

	cur     *skb.Buff // clone source
	curFlow int
	curSegs int
	curLeft int

	queued     uint64
	allocFails uint64
	xmitErrs   uint64
	firstErr   error
	lastErr    error // the latest transmit or allocation error, for ErrFailing

	// run state
	clk       clock
	clockStep int // packets between reads of the clock in Run: 1, or clockEvery (NoTimestamp)
	unclocked int // packets sent since Run last read the clock
	lastTick  time.Duration
	lastSt    netdev.Stats
	lastFail  uint64
}

// NewPktgen checks cfg and prepares a generator over dev: the size
// schedule, the per-flow destinations and sequence numbers, and, for a
// link-layer device, a frame template per size. It returns an error
// wrapping ErrConfig for an invalid config.
func NewPktgen(dev netdev.Device, cfg PktgenConfig) (*Pktgen, error) {
	g := &Pktgen{dev: dev, cfg: cfg, cache: dev.Cache()}
	if err := g.setup(); err != nil {
		return nil, fmt.Errorf("traffic: pktgen: %w", err)
	}
	return g, nil
}

func (g *Pktgen) setup() error {
	cfg := &g.cfg
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	g.devAlloc, _ = g.dev.(Allocator)
	g.flows = cmp0(cfg.Flows, 1)
	g.flowLen = cmp0(cfg.FlowLen, 1)
	g.burstLen = cmp0(cfg.Burst, 1)
	g.clone = max(cfg.Clone, 1)
	g.duration = cmp0(cfg.Duration, DefaultDuration)
	g.interval = cmp0(cfg.Interval, DefaultInterval)
	g.gso = cfg.GSO
	g.link = cfg.Frame != nil
	g.run = cfg.Run
	for g.run == 0 {
		g.run = rand.Uint32()
	}
	switch {
	case g.flows < 1 || g.flows > MaxFlows:
		return bad("%d flows: want 1 to %d", cfg.Flows, MaxFlows)
	case g.flowLen < 1:
		return bad("flow length %d", cfg.FlowLen)
	case g.burstLen < 1 || g.burstLen > MaxBurst:
		return bad("burst %d: want 1 to %d", cfg.Burst, MaxBurst)
	case cfg.Clone < 0:
		return bad("clone %d is negative", cfg.Clone)
	case g.duration < 0:
		return bad("duration %v is negative", cfg.Duration)
	case cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return bad("rate %v", cfg.Rate)
	case g.interval < 0:
		return bad("interval %v is negative", cfg.Interval)
	case cfg.Dst.IsValid() && g.link:
		return bad("both a datagram destination and a frame template")
	case g.gso && g.link:
		return bad("GSO needs a datagram device: a link-layer device sends frames as they are")
	}
	if g.gso {
		s, ok := g.dev.(Segmenter)
		if !ok || !s.GSO() {
			return bad("GSO on a device that does not segment (open the udp device with GSO)")
		}
	}
	mix := cfg.IMIX
	if len(mix) == 0 {
		size := cmp0(cfg.Size, DefaultSize)
		if size < StampLen {
			return bad("size %d is below %d bytes (the stamp)", size, StampLen)
		}
		mix = []IMIXEntry{{Size: size, Weight: 1}}
	}
	for _, e := range mix {
		if err := checkIMIXEntry(e); err != nil {
			return fmt.Errorf("%w: imix: %v", ErrConfig, err)
		}
		if m := maxDatagram(cfg.Dst); !g.link && e.Size > m {
			return bad("size %d is over %d bytes, the largest UDP payload", e.Size, m)
		}
	}
	sizes := schedule(mix)
	g.sched = make([]schedEntry, len(sizes))
	tmplOf := map[int]int{}
	clsOf := map[int]int{}
	for i, size := range sizes {
		g.sched[i].size = size
		if g.gso {
			c, ok := clsOf[size]
			if !ok {
				c = len(g.gsoCap)
				g.gsoSize = append(g.gsoSize, size)
				g.gsoCap = append(g.gsoCap, max(1, min(g.burstLen, gsoMaxSegs, MaxDatagram/size)))
				clsOf[size] = c
			}
			g.sched[i].cls = c
		}
		if !g.link {
			continue
		}
		t, ok := tmplOf[size]
		if !ok {
			ft, err := newTemplate(cfg.Frame, size)
			if err != nil {
				return err
			}
			t = len(g.tmpls)
			g.tmpls = append(g.tmpls, ft)
			tmplOf[size] = t
		}
		g.sched[i].tmpl = t
	}
	g.gsoHeld = make([]int, len(g.gsoCap))
	g.seqs = make([]uint64, g.flows)
	switch {
	case cfg.Dst.IsValid():
		ax, ok := g.dev.(AddrXmitter)
		if !ok {
			return bad("destination %v on a device that cannot address datagrams (no XmitTo)", cfg.Dst)
		}
		if cfg.Dst.Port() == 0 || int(cfg.Dst.Port())+g.flows-1 > 0xffff {
			return bad("destination ports %d to %d", cfg.Dst.Port(), int(cfg.Dst.Port())+g.flows-1)
		}
		g.ax = ax
		g.dsts = make([]netip.AddrPort, g.flows)
		for i := range g.dsts {
			g.dsts[i] = netip.AddrPortFrom(cfg.Dst.Addr(), cfg.Dst.Port()+uint16(i))
		}
	case g.link:
		p := cfg.Frame.DestinationPort
		if p == 0 || int(p)+g.flows-1 > 0xffff {
			return bad("destination ports %d to %d", p, int(p)+g.flows-1)
		}
		g.ports = make([]uint16, g.flows)
		for i := range g.ports {
			g.ports[i] = p + uint16(i)
		}
	}
	g.flowLeft = g.flowLen
	return nil
}

// maxDatagram returns the largest UDP payload the engines send to dst
// over a datagram device: MaxDatagram to an IPv4 (or IPv4-mapped)
// address, MaxDatagram6 to an IPv6 one or, dst zero, to the device's own
// destination, whose family the engines do not know.
func maxDatagram(dst netip.AddrPort) int {
	if dst.IsValid() && dst.Addr().Unmap().Is4() {
		return MaxDatagram
	}
	return MaxDatagram6
}

// cmp0 returns v, or def when v is zero.
func cmp0[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// RunID returns the run number the generator writes in its stamps.
func (g *Pktgen) RunID() uint32 { return g.run }

// Queued returns the packets handed to the device so far.
func (g *Pktgen) Queued() uint64 { return g.queued }

// waitPaid sleeps until paid (on the run's clock) or the run's duration,
// whichever is first, ticking the interval lines that fall due meanwhile;
// ctx's done ends it early.
func (g *Pktgen) waitPaid(paid time.Duration, done <-chan struct{}) {
	stop := min(paid, g.duration)
	for now := g.clk.now(); now < stop; {
		wake := stop
		if g.cfg.OnInterval != nil {
			wake = min(wake, g.lastTick+g.interval)
		}
		if done != nil {
			wake = min(wake, now+pacerSlice)
		}
		sleep(wake - now)
		now = g.clk.now()
		if g.cfg.OnInterval != nil && now-g.lastTick >= g.interval && now < stop {
			g.tick(now)
		}
		if done != nil {
			select {
			case <-done:
				return
			default:
			}
		}
	}
}

// remaining returns how many packets the count, and during Run's burst
// its cut, still allow.
func (g *Pktgen) remaining() uint64 {
	n := g.countLeft()
	if g.cut != 0 {
		n = min(n, g.cut)
	}
	return n
}

// countLeft returns how many packets the count still allows (all, without
// a count).
func (g *Pktgen) countLeft() uint64 {
	if g.cfg.Count == 0 {
		return math.MaxUint64
	}
	return g.cfg.Count - min(g.queued, g.cfg.Count)
}

// Burst sends one burst stamped with the current time: Burst packets (fewer
// when the count is nearly reached), the last with more false, or with GSO
// one super-packet of up to Burst datagrams. It returns the packets handed
// to the device. Transmit errors are counted (Result's XmitErrors) and do
// not stop the burst; the error returned is netdev.ErrClosed once the
// device is closed, or the pool's error when no buffer could be had (the
// doorbell was rung for what was queued). It allocates nothing.
func (g *Pktgen) Burst() (int, error) {
	if g.cfg.NoTimestamp {
		return g.burst(0)
	}
	return g.burst(time.Now().UnixNano())
}

// clockEvery is how many packets a NoTimestamp run without a Rate sends
// between reads of the clock.
const clockEvery = 64

// stamp returns the send time to write in the stamps of a burst sent at
// wall (ns since the Unix epoch): wall, or 0 with NoTimestamp.
func (g *Pktgen) stamp(wall int64) int64 {
	if g.cfg.NoTimestamp {
		return 0
	}
	return wall
}

// clockDue counts a burst of sent packets (a burst that sent none counts
// as one) and reports whether Run reads the clock after it.
func (g *Pktgen) clockDue(sent int) bool {
	g.unclocked += max(sent, 1)
	return g.unclocked >= g.clockStep
}

func (g *Pktgen) burst(ts int64) (int, error) {
	rem := g.remaining()
	units := 1
	if !g.gso {
		units = int(min(uint64(g.burstLen), rem))
	}
	sent := 0
	for i := range units {
		maxSegs := 1
		if g.gso {
			maxSegs = int(min(uint64(g.burstLen), rem))
		}
		if maxSegs == 0 {
			break
		}
		b, flow, segs, err := g.next(ts, maxSegs)
		if err != nil {
			g.allocFails++
			g.note(err)
			if i > 0 {
				if ferr := g.dev.Flush(); ferr != nil {
					g.xmitErrs++
					g.note(ferr)
				}
			}
			return sent, err
		}
		g.queued += uint64(segs)
		sent += segs
		rem -= uint64(segs)
		if err := g.xmit(b, flow, i+1 < units); err != nil {
			g.xmitErrs++
			g.note(err)
			if errors.Is(err, netdev.ErrClosed) {
				return sent, err
			}
		}
	}
	return sent, nil
}

// plainBursts sends bursts of datagrams stamped with ts as burst does,
// for a run whose datagrams are all built afresh from the cache (plain: no
// GSO, clone, frame template or device allocator): a first burst of up to
// first datagrams, then bursts of up to Burst, until unclocked reaches
// clockStep (it counts them as clockDue does: with a clock read after
// every burst, that is after the first), the count is reached or over is
// set, or after a burst that met an error, which it counts as burst does
// and leaves to Run. It returns the datagrams handed to the device over
// all its bursts, and the pool's error or netdev.ErrClosed that ended
// them. Run gives it the length pace.due cut the first burst to; with a
// rate the clock is read after every burst, so it sends that burst alone.
// It holds the generator's state in locals and calls little beyond the
// cache and the device: on hosts that drop the TLB on every system call,
// each page and cache line touched between two doorbells is a miss, and
// the path through Run, burst, next and build touched enough of them to
// cost 60 ns a datagram (docs/BENCHMARKS-JOURNAL.md, "A plain loop for
// plain runs").
func (g *Pktgen) plainBursts(over *atomic.Bool, ts int64, first int) (int, error) {
	c, dev, ax, dsts := g.cache, g.dev, g.ax, g.dsts
	sched, si, seqs := g.sched, g.si, g.seqs
	flow, flowLeft, flows, flowLen := g.flow, g.flowLeft, g.flows, g.flowLen
	burstLen, run, xe := g.burstLen, g.run, g.xmitErrs
	total, want := 0, first
	var err error
	for err == nil {
		rem := g.countLeft()
		if rem == 0 {
			break
		}
		units := int(min(uint64(want), rem))
		want = burstLen
		sent := 0
		for i := range units {
			// The flow and the size advance before the allocation, as
			// in next and build.
			f, size := flow, sched[si].size
			if flowLeft--; flowLeft == 0 {
				flowLeft = flowLen
				if flow++; flow == flows {
					flow = 0
				}
			}
			if si++; si == len(sched) {
				si = 0
			}
			b, aerr := c.Alloc(size)
			if aerr != nil {
				g.allocFails++
				g.note(aerr)
				if i > 0 {
					if ferr := dev.Flush(); ferr != nil {
						g.xmitErrs++
						g.note(ferr)
					}
				}
				err = aerr
				break
			}
			putDatagram(b.Put(size), run, f, seqs[f], ts)
			seqs[f]++
			g.queued++
			sent++
			var xerr error
			if ax != nil {
				xerr = ax.XmitTo(b, dsts[f], i+1 < units)
			} else {
				xerr = dev.Xmit(b, i+1 < units)
			}
			if xerr != nil {
				g.xmitErrs++
				g.note(xerr)
				if errors.Is(xerr, netdev.ErrClosed) {
					err = xerr
					break
				}
			}
		}
		total += sent
		g.unclocked += max(sent, 1)
		if g.xmitErrs != xe || g.unclocked >= g.clockStep || over.Load() {
			break
		}
	}
	g.si, g.flow, g.flowLeft = si, flow, flowLeft
	return total, err
}

// putDatagram writes a datagram's payload into p: the stamp of run, flow,
// seq and ts, then zeros.
func putDatagram(p []byte, run uint32, flow int, seq uint64, ts int64) {
	PutStamp(p, Stamp{Run: run, Flow: uint32(flow), Seq: seq, Tstamp: ts})
	clear(p[StampLen:])
}

func (g *Pktgen) note(err error) {
	if g.firstErr == nil {
		g.firstErr = err
	}
	g.lastErr = err
}

func (g *Pktgen) xmit(b *skb.Buff, flow int, more bool) error {
	if g.ax != nil {
		return g.ax.XmitTo(b, g.dsts[flow], more)
	}
	return g.dev.Xmit(b, more)
}

// next returns the buffer to send next, its flow and the datagrams it
// holds (at most maxSegs): a new buffer, or a clone of the current one.
func (g *Pktgen) next(ts int64, maxSegs int) (*skb.Buff, int, int, error) {
	if g.clone == 1 {
		flow := g.pickFlow()
		b, segs, err := g.build(flow, maxSegs, ts)
		return b, flow, segs, err
	}
	if g.cur == nil || g.curLeft == 0 || g.curSegs > maxSegs {
		g.dropCur()
		flow := g.pickFlow()
		if g.gso {
			// A super-packet small enough that all its copies fit in
			// what the run may still send (-n 10 --clone 4: two
			// datagrams sent four times, then one sent twice, as the
			// count cuts a plain run's last clones), rather than one
			// that the count lets out fewer times. The count alone:
			// Run's cut of one burst, which a GSO burst's one
			// super-packet fills, is in maxSegs already.
			r, c := g.countLeft(), uint64(g.clone)
			maxSegs = int(max(1, min(uint64(maxSegs), r/c)))
		}
		b, segs, err := g.build(flow, maxSegs, ts)
		if err != nil {
			return nil, 0, 0, err
		}
		g.cur, g.curFlow, g.curSegs, g.curLeft = b, flow, segs, g.clone
	}
	g.curLeft--
	return g.cache.Clone(g.cur), g.curFlow, g.curSegs, nil
}

// warmBytes is the most memory warm writes: a burst's buffers beyond it
// are left to the run.
const warmBytes = 512 << 20

// warm allocates one burst's buffers (one for GSO, whose burst is one
// super-packet; one per Clone packets) of the largest size the run sends, writes them and frees
// them, before the run's clock starts: the pool maps and the kernel faults
// in their memory here rather than in the first timed burst. 4096
// datagrams of 65507 bytes, 268 MB, took 1.2 s to touch the first time on
// the machines skb was measured on, against 40 ms a burst after that. A
// buffer the pool refuses ends it; nothing is sent. It reports false when
// done was closed before it finished (it then stops, after freeing what it
// took).
func (g *Pktgen) warm(done <-chan struct{}) bool {
	size := 0
	for _, e := range g.sched {
		if g.link {
			size = max(size, len(g.tmpls[e.tmpl].frame))
		} else {
			size = max(size, e.size)
		}
	}
	units := g.burstLen
	if g.gso {
		units, size = 1, min(size*g.burstLen, MaxDatagram)
	}
	// With Clone N a burst allocates one buffer per N packets.
	units = (units + g.clone - 1) / g.clone
	units = int(min(uint64(units), g.remaining(), uint64(warmBytes/max(size, 1))))
	bufs := make([]*skb.Buff, 0, units)
	for range units {
		if closed(done) {
			break
		}
		b, err := g.alloc(size)
		if err != nil {
			break
		}
		clear(b.Put(size))
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		g.cache.Free(b)
	}
	return !closed(done)
}

// closed reports whether done is closed, without waiting; a nil done never
// is.
func closed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (g *Pktgen) dropCur() {
	if g.cur != nil {
		g.cache.Free(g.cur)
		g.cur = nil
	}
}

func (g *Pktgen) pickFlow() int {
	f := g.flow
	g.flowLeft--
	if g.flowLeft == 0 {
		g.flowLeft = g.flowLen
		g.flow++
		if g.flow == g.flows {
			g.flow = 0
		}
	}
	return f
}

func (g *Pktgen) alloc(n int) (*skb.Buff, error) {
	if g.devAlloc != nil {
		return g.devAlloc.Alloc(n)
	}
	return g.cache.Alloc(n)
}

// build makes a new buffer for flow: one datagram or frame of the next
// scheduled size, or with GSO a super-packet of up to maxSegs datagrams of
// one size (see gsoNext), each stamped with its own sequence number.
func (g *Pktgen) build(flow, maxSegs int, ts int64) (*skb.Buff, int, error) {
	seq := g.seqs[flow]
	if g.gso {
		cls, n := g.gsoNext(maxSegs)
		b, segs, err := g.buildDatagrams(flow, g.gsoSize[cls], n, seq, ts)
		if err != nil {
			g.gsoHeld[cls] += n // held back again, for a later super-packet
		}
		return b, segs, err
	}
	e := &g.sched[g.si]
	g.si++
	if g.si == len(g.sched) {
		g.si = 0
	}
	if g.link {
		t := &g.tmpls[e.tmpl]
		b, err := g.alloc(len(t.frame))
		if err != nil {
			return nil, 0, err
		}
		t.fill(b.Put(len(t.frame)), g.ports[flow], Stamp{Run: g.run, Flow: uint32(flow), Seq: seq, Tstamp: ts})
		g.seqs[flow] = seq + 1
		return b, 1, nil
	}
	return g.buildDatagrams(flow, e.size, 1, seq, ts)
}

// gsoNext returns the size class (index in gsoSize) and the count, 1 to
// maxSegs, of the datagrams of the next GSO super-packet. It walks the
// per-datagram schedule, holding each size's datagrams back, until a size
// holds a super-packet's worth (its gsoCap, or maxSegs when fewer), and
// takes those: the datagrams sent are the schedule's, grouped by size. It
// takes one step of the schedule per datagram, on average.
func (g *Pktgen) gsoNext(maxSegs int) (cls, segs int) {
	if len(g.gsoCap) == 1 {
		// One size: the walk would hold nothing back.
		return 0, min(g.gsoCap[0], maxSegs)
	}
	for {
		e := &g.sched[g.si]
		g.si++
		if g.si == len(g.sched) {
			g.si = 0
		}
		g.gsoHeld[e.cls]++
		if n := min(g.gsoCap[e.cls], maxSegs); g.gsoHeld[e.cls] >= n {
			g.gsoHeld[e.cls] -= n
			return e.cls, n
		}
	}
}

// buildDatagrams makes a buffer of segs datagrams of size bytes for flow,
// stamped from sequence number seq on: a GSO super-packet when segs is
// more than 1.
func (g *Pktgen) buildDatagrams(flow, size, segs int, seq uint64, ts int64) (*skb.Buff, int, error) {
	b, err := g.alloc(size * segs)
	if err != nil {
		return nil, 0, err
	}
	p := b.Put(size * segs)
	if segs == 1 {
		putDatagram(p, g.run, flow, seq, ts)
	} else {
		// One clear for the whole run and the stamps over it: a clear per
		// datagram costs a call each.
		clear(p)
		for k := range segs {
			PutStamp(p[k*size:], Stamp{Run: g.run, Flow: uint32(flow), Seq: seq + uint64(k), Tstamp: ts})
		}
	}
	if segs > 1 {
		b.SetGSO(size, segs, skb.GSOUDPL4)
	}
	g.seqs[flow] = seq + uint64(segs)
	return b, segs, nil
}

// Run sends until the count or the duration is reached or ctx is done
// (done during the warm-up, while Run touches a burst's buffers before the
// first burst: nothing is sent), pacing at Rate, calling OnInterval every
// Interval, then rings the doorbell for anything still queued and returns
// what the run did. The error is nil when the run ended by its bounds or
// ctx; otherwise it is netdev.ErrClosed (the device was closed under the
// run), an error wrapping ErrFailing when 64 sends in a row failed and
// none went out meanwhile (at the run's start; later, for failStall, 3 s,
// too), or an allocation error that no retry can fix (skb.ErrTooBig: the
// size does not fit the device's buffers); the result still holds what
// was sent. Stop a run with ctx, and close the device after Run returns: the
// generator allocates from the device's Cache, which Close closes.
func (g *Pktgen) Run(ctx context.Context) (PktgenResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	done := ctx.Done()
	if err := g.dev.Flush(); errors.Is(err, netdev.ErrClosed) {
		// Closed before the run: its Cache may not be used any more.
		return PktgenResult{Flows: g.flows}, err
	}
	if !g.warm(done) {
		// Stopped during the warm-up (a large burst can take a second to
		// touch): nothing was sent.
		return PktgenResult{Flows: g.flows}, nil
	}
	g.clk = newClock()
	g.lastTick = 0
	g.clockStep, g.unclocked = 1, 0
	// Between reads of the clock (NoTimestamp), the end of the duration
	// and of ctx come as a flag set by a timer and by ctx's cancellation:
	// a device that starts to block partway through clockEvery sends
	// (each send up to the driver's own timeout) does not hold the run
	// past them.
	sparse := g.cfg.NoTimestamp && g.cfg.Rate == 0 // the clock read every clockEvery packets
	// Runs of datagrams built afresh go through plainBursts.
	plain := !g.gso && !g.link && g.clone == 1 && g.devAlloc == nil && !g.noPlain
	var over atomic.Bool
	if sparse {
		t := time.AfterFunc(g.duration, func() { over.Store(true) })
		defer t.Stop()
		if done != nil {
			defer context.AfterFunc(ctx, func() { over.Store(true) })()
		}
	}
	st0 := g.dev.Stats()
	g.lastSt, g.lastFail = st0, g.allocFails
	pace := newPacer(g.cfg.Rate)
	q0, fails0, xe0 := g.queued, g.allocFails, g.xmitErrs
	g.firstErr, g.lastErr = nil, nil
	fw := failWatch{out: st0.TxPackets, errs: g.xmitErrs, drops: st0.TxDroppedTotal()}
	var runErr error
	var now time.Duration
loop:
	for g.remaining() > 0 {
		want := int(min(uint64(g.burstLen), g.remaining()))
		// The run's last burst is cut to what the rate still allows
		// before the duration ends (-b 64 -r 100 -t 2: 200, not 256).
		want = pace.due(want, g.duration)
		// A wait for the rate (one second at -r 1) wakes for the end of
		// the run, the next interval line and, in slices, ctx.
		wake := g.duration
		if g.cfg.OnInterval != nil {
			wake = min(wake, g.lastTick+g.interval)
		}
		if done != nil {
			wake = min(wake, now+pacerSlice)
		}
		var ok bool
		now, ok = pace.wait(&g.clk, now, want, wake)
		if now >= g.duration {
			break
		}
		if !ok {
			if g.cfg.OnInterval != nil && now-g.lastTick >= g.interval {
				g.tick(now)
			}
			select {
			case <-done:
				break loop
			default:
			}
			continue
		}
		xe := g.xmitErrs
		var sent int
		var err error
		if plain {
			// Bursts up to the next read of the clock.
			sent, err = g.plainBursts(&over, g.stamp(g.clk.wall(now)), want)
		} else {
			g.cut = uint64(want)
			sent, err = g.burst(g.stamp(g.clk.wall(now)))
			g.cut = 0
		}
		if sent < want {
			// A GSO super-packet of fewer datagrams than Burst (a size
			// of which fewer fit), or a burst cut short: the rate is
			// paid for the datagrams sent. (plainBursts sends more than
			// want, several bursts, only without a rate.)
			pace.tat -= time.Duration(float64(want-sent) * pace.perPacket)
		}
		if g.xmitErrs != xe {
			if runErr = g.failing(&fw, st0, g.clk.now()); runErr != nil {
				break
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, pool.ErrExhausted):
			// Buffers are in flight (an AF_XDP UMEM): give completions
			// a moment.
			sleep(20 * time.Microsecond)
		default:
			runErr = err
			break loop
		}
		if plain {
			// plainBursts counted its packets in unclocked.
			if err == nil && g.unclocked < g.clockStep && !over.Load() {
				continue
			}
		} else if err == nil && !g.clockDue(sent) && !over.Load() {
			continue
		}
		prev := now
		now = g.clk.now()
		if now-fw.at >= failCheck {
			// Packets the device drops without an error show in its
			// counters only, which cost a system call to read on some.
			fw.at = now
			if runErr = g.failing(&fw, st0, now); runErr != nil {
				break
			}
		}
		g.unclocked, g.clockStep = 0, 1
		if sparse && now-prev <= time.Millisecond {
			g.clockStep = clockEvery
		}
		if now >= g.duration {
			break
		}
		if g.cfg.OnInterval != nil && now-g.lastTick >= g.interval {
			g.tick(now)
		}
		if done != nil {
			select {
			case <-done:
				break loop
			default:
			}
		}
	}
	g.dropCur()
	if runErr == nil || !errors.Is(runErr, netdev.ErrClosed) {
		if err := g.dev.Flush(); err != nil && !errors.Is(err, netdev.ErrClosed) {
			g.xmitErrs++
			g.note(err)
		}
	}
	if pace.perPacket > 0 && g.remaining() == 0 && runErr == nil {
		// A rate-limited run that sent its count ends when the bucket has
		// paid for the last burst, or at the duration: -r 10 -b 100 -n 50
		// takes 5 s, as 50 packets at 10 pps do, not the moment the burst
		// went out.
		g.waitPaid(pace.tat, done)
	}
	end := g.clk.now()
	if g.cfg.OnInterval != nil && end > g.lastTick &&
		(end-g.lastTick >= finalInterval || g.dev.Stats() != g.lastSt || g.allocFails != g.lastFail) {
		// The run's last interval, whole or partial, so that the
		// intervals add up to the result: the loop ends at the
		// duration before it would tick for it.
		g.tick(end)
	}
	st := g.dev.Stats().Sub(st0)
	r := PktgenResult{
		Packets:    st.TxPackets,
		Seconds:    end.Seconds(),
		Errors:     st.TxDroppedTotal() + g.allocFails - fails0,
		Doorbells:  st.TxDoorbells,
		Queued:     g.queued - q0,
		Flows:      g.flows,
		XmitErrors: g.xmitErrs - xe0,
		FirstErr:   g.firstErr,
	}
	r.Bytes, r.FrameBytes = g.payload(st.TxPackets, st.TxBytes)
	r.PPS, r.Mbps = rates(r.Packets, r.Bytes, r.Seconds)
	_, r.FrameMbps = rates(r.Packets, r.FrameBytes, r.Seconds)
	return r, runErr
}

// finalInterval is the shortest last interval Run reports when nothing
// was sent or dropped in it: a run that ends right after a tick has
// nothing left to say.
const finalInterval = time.Millisecond

// failWatch is what Run's failing check remembers: the device's
// tx_packets when a packet was last seen going out, the transmit errors
// and tx_dropped counted then, and when that was.
type failWatch struct {
	out, errs, drops uint64
	since            time.Duration // when a packet was last seen going out
	at               time.Duration // the last periodic check
}

// Run's checks for sends that all fail: how often it looks at the device's
// counters for those that fail without an error (some devices read them
// with a system call), and how long a run that has sent packets must then
// see nothing go out before it ends: longer than a send may block (the udp
// device's send timeout is a second) while a slow link drains, and than a
// busy peer or NAPI thread holds a ring full (back-pressure, not failure).
const (
	failCheck = 50 * time.Millisecond
	failStall = 3 * time.Second
)

// failing returns the run's error at now when failFast sends have failed
// since a packet last went out (the destination or the device refuses
// them, a link has no carrier, an interface was removed: more of the same
// will not help), or nil: at once while nothing has gone out in the run,
// and after failStall without a packet going out once some have. A failed
// send is a transmit call that returned an error (a GSO super-packet is
// one), or, from a device that returned none, a packet it dropped. st0 is
// the device's counters at the run's start. The error wraps ErrFailing and
// the latest transmit error, or names the device's drop counters when the
// device dropped the packets without an error (an AF_XDP queue to a link
// without carrier).
func (g *Pktgen) failing(w *failWatch, st0 netdev.Stats, now time.Duration) error {
	st := g.dev.Stats()
	drops := st.TxDroppedTotal()
	if st.TxPackets != w.out {
		w.out, w.errs, w.drops, w.since = st.TxPackets, g.xmitErrs, drops, now
		return nil
	}
	failed := g.xmitErrs - w.errs
	if failed == 0 {
		failed = drops - w.drops
	}
	if failed < failFast || st.TxPackets != st0.TxPackets && now-w.since < failStall {
		return nil
	}
	what := fmt.Sprintf("%d sends failed, none went out", failed)
	if st.TxPackets != st0.TxPackets {
		what = fmt.Sprintf("the last %d sends failed, none went out since packet %d", failed, st.TxPackets-st0.TxPackets)
	}
	if g.xmitErrs != w.errs && g.lastErr != nil {
		return fmt.Errorf("%w: %s: %w", ErrFailing, what, g.lastErr)
	}
	var names []string
	d := st.Sub(st0)
	for r, n := range d.TxDropped {
		if n > 0 {
			names = append(names, fmt.Sprintf("tx_dropped_%v %d", netdev.DropReason(r), n))
		}
	}
	return fmt.Errorf("%w: %s: the device dropped them (%s)", ErrFailing, what, strings.Join(names, ", "))
}

// payload splits the device's tx_bytes for packets into UDP payload bytes
// and, on a link-layer device, whole-frame bytes (the headers of every
// template are the same length).
func (g *Pktgen) payload(packets, txBytes uint64) (bytes, frameBytes uint64) {
	if !g.link || len(g.tmpls) == 0 {
		return txBytes, 0
	}
	hdr := packets * uint64(g.tmpls[0].payOff)
	return txBytes - min(hdr, txBytes), txBytes
}

func rates(packets, bytes uint64, secs float64) (pps, mbps float64) {
	if secs <= 0 {
		return 0, 0
	}
	return float64(packets) / secs, float64(bytes) * 8 / secs / 1e6
}

func (g *Pktgen) tick(now time.Duration) {
	st := g.dev.Stats()
	d := st.Sub(g.lastSt)
	iv := PktgenInterval{
		Elapsed:   now,
		Seconds:   (now - g.lastTick).Seconds(),
		Packets:   d.TxPackets,
		Errors:    d.TxDroppedTotal() + g.allocFails - g.lastFail,
		Doorbells: d.TxDoorbells,
	}
	iv.Bytes, iv.FrameBytes = g.payload(d.TxPackets, d.TxBytes)
	iv.PPS, iv.Mbps = rates(iv.Packets, iv.Bytes, iv.Seconds)
	_, iv.FrameMbps = rates(iv.Packets, iv.FrameBytes, iv.Seconds)
	g.lastSt, g.lastTick, g.lastFail = st, now, g.allocFails
	g.cfg.OnInterval(iv)
}

// Close frees the buffer the generator keeps as the source of its clones.
// It does not close the device.
func (g *Pktgen) Close() { g.dropCur() }
