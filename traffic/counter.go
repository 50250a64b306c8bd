package traffic

import "math"

// dupWindow is how many sequence numbers a flow remembers, in blocks of
// 64 ending with the block of the highest seen: a repeat among them counts
// as a duplicate. It covers a GSO super-packet (64 datagrams) sent whole
// many times over. dupWords is its length in 64-bit words.
const (
	dupWindow = 1024
	dupWords  = dupWindow / 64
)

// flowState is what a Counter knows of one flow of one generator run.
type flowState struct {
	run    uint32
	active bool
	held   bool   // pend holds a far stamp
	heldN  uint8  // stamps near the flow since pend was held
	first  uint64 // lowest sequence number seen
	next   uint64 // highest sequence number seen, plus one
	unique uint64 // packets counted once: all but the duplicates
	reord  uint64
	dup    uint64
	last   uint64 // the Counter's packet count at the flow's last packet
	epoch  uint64 // the Counter's epoch at the flow's last packet (Age)
	// pend is the sequence number of the flow's last stamp when held:
	// MaxSeqAhead ahead of next or more, counted as untracked until the
	// flow's next stamp follows it (see Add).
	pend uint64
	// seen is a ring of bits, one per sequence number: bit s%64 of word
	// (s/64)%dupWords is set once s has arrived. It holds the blocks of
	// 64 from (next-1)/64-dupWords+1 to (next-1)/64, so at least the
	// dupWindow-63 sequence numbers below next.
	seen [dupWords]uint64
}

// lost returns the sequence numbers from first to next-1 that never came.
func (f *flowState) lost() uint64 {
	span := f.next - f.first
	if f.unique >= span {
		return 0
	}
	return span - f.unique
}

// advance makes seq, at least next, the highest sequence number seen:
// the blocks of the ring that come into the window are cleared.
func (f *flowState) advance(seq uint64) {
	top, newTop := (f.next-1)/64, seq/64
	if newTop-top >= dupWords {
		clear(f.seen[:])
	} else {
		for w := top + 1; w <= newTop; w++ {
			f.seen[w%dupWords] = 0
		}
	}
	f.next = seq + 1
}

// FlowTotals sums a Counter's flows.
type FlowTotals struct {
	// Packets counts the stamped packets added, duplicates included.
	Packets uint64
	// Lost counts the sequence numbers missing in each flow between the
	// lowest and the highest seen. A packet still in flight at the end
	// of a run is not lost; one that arrives late makes up for its gap.
	Lost uint64
	// Reordered counts the packets that arrived after a packet of their
	// flow with a higher sequence number and whose sequence number had not
	// arrived before: RFC 4737's reordered packets (sequence number below
	// the next expected), duplicates excepted. A packet whose sequence
	// number is older than the flow remembers (see Duplicates) counts here
	// even if it is a repeat, and makes up for its gap in Lost (unless it
	// is 1024 or more below the lowest seen): packets held back that long
	// are far more common than repeats that late, each of which hides a
	// loss.
	Reordered uint64
	// Duplicates counts the packets whose sequence number had already
	// arrived in their flow, right after the first copy or later (as the
	// clones of one buffer, or of a GSO super-packet sent whole again,
	// arrive). A flow remembers the sequence numbers in the block of 64
	// of its highest one and the 15 blocks before it: the last 961 to
	// 1024 up to the highest, as an IPsec anti-replay window remembers
	// them (RFC 4303 section 3.4.3, a bitmap as in RFC 6479).
	Duplicates uint64
	// Flows counts the flows seen (a flow of a new run counts again).
	Flows int
	// Untracked counts stamps whose flow number is MaxFlows or more, whose
	// sequence number is MaxSeqAhead or more ahead of the next one their
	// flow expects and not followed by the flow's next stamps (a stamp
	// from elsewhere, not a loss: see MaxSeqAhead), whose flow is not its
	// run's one on a Counter that counts one (SetOneFlowPerRun), or whose (run,
	// flow) found no room among the 64 counted beside the flow table (see
	// Counter): they count in Packets only.
	Untracked uint64
}

// MaxSeqAhead bounds how far ahead of the next sequence number its flow
// expects a stamp may be to count at once: 960, the least a flow remembers
// of the sequence numbers below its highest. A stamp further ahead is held,
// as untracked, and counts only when one of the flow's next 9 stamps
// follows it (a repeat of it, or one less than 64 before it or 65536 after
// it): the flow then moved there, and the sequence numbers between count as
// lost, as any gap's do (a burst of loss). A stamp behind the flow, however
// far, is a late packet (see FlowTotals.Reordered): packets held back by a
// path for 65536 places and more come late in groups, which must not move
// the flow back. One exception: a stamp MaxSeqAhead or more behind a
// flow's one stamp so far is held too, and when the stamp after it
// follows it and not that first, the flow starts again at it and the
// first counts as untracked (a stray first, such as a stamp forged at
// 2^63 or 2^64-1, would otherwise make every later packet of the flow
// late, or count the whole gap to the flow lost); when the next follows
// the first instead (a sink started in the middle of a flow, whose
// second packet came that late), the held one counts as late. A genuine
// first that came MaxSeqAhead or more early, before all the packets
// behind it, is then untracked, and its sequence number lost. With the stamp's check (see Stamp), which keeps corrupt
// stamps out, this guards the count against a stamp from elsewhere (a
// forged one, or a sender's bug): it costs one untracked packet rather than
// up to 2^63 lost ones with every later packet reordered; a stamp taken at
// once is never so far ahead that the genuine packets after it fall out of
// the window. A flow that keeps losing more than 960 at a time counts
// whole, each stamp held until the next follows it (its last may stay
// untracked).
const MaxSeqAhead = dupWindow - 64

// maxFollow is how far after a held stamp one that follows it may be: a
// flow that keeps losing more than MaxSeqAhead at a time.
const maxFollow = 1 << 16

// far reports whether seq is MaxSeqAhead or more ahead of next.
func far(next, seq uint64) bool { return seq >= next && seq-next >= MaxSeqAhead }

// heldFor is how many stamps near its flow a held stamp outlasts.
const heldFor = 8

// followBehind is how far behind a held stamp the flow's next stamp may be
// and still follow it (reordering around the edge of a burst of loss). It
// is well under MaxSeqAhead, so that the genuine packets after a stamp
// from elsewhere, which lie far behind it, do not confirm it.
const followBehind = 64

// follows reports whether seq follows the held sequence number pend: it
// is pend again (a clone of it), or less than maxFollow after it, or less
// than followBehind before it.
func follows(pend, seq uint64) bool {
	if seq >= pend {
		return seq-pend < maxFollow
	}
	return pend-seq < followBehind
}

// Counter counts stamped packets per flow, for loss, reordering and
// duplicates. The zero value is ready. Each flow remembers which of the last
// 961 to 1024 sequence numbers up to its highest have arrived (a bitmap of
// 128 bytes per flow), to tell a duplicate from a late packet. A packet
// whose stamp carries a run other than the one its flow has counts in a flow
// of its own: a generator's next run replaces the run before it once that
// one has been quiet (65536 packets of any flow since its last, or a whole
// epoch: see Age; the old run's figures stay in the totals), and runs
// sending at the same time (two generators to one port) are counted apart:
// beside the run in each flow's table entry, up to 64 (run, flow) pairs in
// all (a run with N flows takes N; one beside that has been quiet makes
// room; a run that sends less than once an epoch while others send is taken
// for stopped, and its next packet starts it again, its loss across the gap
// not counted); past that, the packets of a further pair count as untracked
// (in Packets only) until there is room. Flows numbered at or above the
// table's limit (MaxFlows; SetTableLimit lowers it) are counted beside it
// the same way. Add allocates only when a flow number above all seen so far arrives
// (the table grows, up to its limit: 200 bytes a flow, 12.5 MiB for MaxFlows)
// and for each run counted beside another. A Counter is not safe for
// concurrent use.
type Counter struct {
	flows []flowState
	// oneFlow says each run counts one flow here (SetOneFlowPerRun); runs
	// holds up to len(runs) runs' flows, runN of them in use.
	oneFlow bool
	runs    [4]runLead
	runN    int
	// limit bounds the flow table (0: MaxFlows); see SetTableLimit.
	limit int
	// hot is the state beside the table that the last packet counted in,
	// hotKey its flow and run: a sink port above the table's limit sees
	// one flow, and finds it without a map lookup per packet.
	hot    *flowState
	hotKey runFlow
	side   map[runFlow]*flowState // runs counted beside the one in flows, at most maxSideRuns
	// sideBusy is a packet count up to which no run beside can have
	// been quiet for runQuiet packets: a full side table is scanned for
	// one only past it.
	sideBusy  uint64
	epoch     uint64 // Age calls so far
	packets   uint64
	untracked uint64
	folded    FlowTotals // of runs replaced in their flow
}

// runFlow names one run's flow.
type runFlow struct{ flow, run uint32 }

const (
	// runQuiet is how many packets (of any flow) must have arrived since
	// a flow's last packet of its run for a packet of another run to
	// replace that run rather than be counted beside it.
	runQuiet = 1 << 16
	// maxSideRuns bounds the runs counted beside the ones in the flow
	// table: a stream of forged run numbers costs at most that many
	// flow states.
	maxSideRuns = 64
)

// SetTableLimit bounds the flow table to n flows (at most MaxFlows; 0 or
// less restores MaxFlows), n*200 bytes: stamps of flows numbered n or more are
// counted beside the table, 64 (run, flow) pairs at most. One Counter per
// port of a sink on many ports takes a small limit, so that a forged stamp
// with a high flow number cannot make every port's table MaxFlows long.
// Call it before the first Add.
func (c *Counter) SetTableLimit(n int) {
	c.limit = min(max(n, 0), MaxFlows)
}

// SetOneFlowPerRun makes the Counter count one flow of each run: the one
// that has sent the most of the run's stamps here (the first flow seen,
// until another has sent more); a stamp of the run's other flows counts as
// untracked. A sink with a socket per port of a generator's flows
// (RunSinks) sees one flow a port, and a datagram whose destination port a
// flipped bit sent to another port's socket (no UDP checksum check: an
// offloading device trusted) would otherwise start a flow of its own there,
// a very lossy one. Strays that come to a port before the port's own flow
// does (pktgen's --flow-len sends one flow's turn before the next flow's)
// lead until that flow has sent more; then what they counted moves to
// untracked, with the port's own flow's stamps before that. It keeps the
// flows of the first 4 runs seen at once; a fifth replaces the oldest. Call
// it before the first Add.
func (c *Counter) SetOneFlowPerRun() { c.oneFlow = true }

// runLead is a run's flows at a Counter that counts one (SetOneFlowPerRun):
// lead, the one counted, and other, the last other one seen, with how many
// stamps each sent here (other's since it was last seen first).
type runLead struct {
	run           uint32
	lead, other   uint32
	leadN, otherN uint32
}

// dropFlow forgets the state of flow's run, whose stamps turned out to be
// strays (SetOneFlowPerRun): what it counted moves to untracked, so that a
// few strays that came first, far apart, leave no flow and no loss behind.
func (c *Counter) dropFlow(flow, run uint32) {
	var f *flowState
	if int(flow) < len(c.flows) && c.flows[flow].active && c.flows[flow].run == run {
		f = &c.flows[flow]
	} else if o := c.side[runFlow{flow, run}]; o != nil {
		f = o
		delete(c.side, runFlow{flow, run})
		if c.hot == o {
			c.hot = nil
		}
	}
	if f == nil || !f.active {
		return
	}
	c.untracked += f.unique + f.dup
	*f = flowState{}
}

// noFlow is a flow number no stamp counts with (they are under MaxFlows).
const noFlow = ^uint32(0)

// strayFlow reports whether s's flow is not the one its run counts here
// (SetOneFlowPerRun), counting s for its flow.
func (c *Counter) strayFlow(s Stamp) bool {
	for i := range c.runN {
		r := &c.runs[i]
		if r.run != s.Run {
			continue
		}
		switch s.Flow {
		case r.lead:
			r.leadN = min(r.leadN+1, 1<<31)
			return false
		case r.other:
			r.otherN = min(r.otherN+1, 1<<31)
			if r.otherN <= r.leadN {
				return true
			}
			r.lead, r.other = r.other, r.lead
			r.leadN, r.otherN = r.otherN, r.leadN
			c.dropFlow(r.other, s.Run)
			return false
		}
		r.other, r.otherN = s.Flow, 1
		return true
	}
	k := runLead{run: s.Run, lead: s.Flow, other: noFlow, leadN: 1}
	if c.runN < len(c.runs) {
		c.runs[c.runN] = k
		c.runN++
	} else {
		copy(c.runs[:], c.runs[1:])
		c.runs[len(c.runs)-1] = k
	}
	return false
}

func (c *Counter) tableLimit() int {
	if c.limit == 0 {
		return MaxFlows
	}
	return c.limit
}

// Add counts the packet stamped s. It does not allocate once s.Flow's
// entry exists.
func (c *Counter) Add(s Stamp) {
	c.packets++
	if s.Flow >= MaxFlows || c.oneFlow && c.strayFlow(s) {
		c.untracked++
		return
	}
	var f *flowState
	if int(s.Flow) < len(c.flows) || int(s.Flow) < c.tableLimit() {
		if int(s.Flow) >= len(c.flows) {
			c.grow(int(s.Flow) + 1)
		}
		f = &c.flows[s.Flow]
		if f.active && f.run != s.Run {
			f = c.otherRun(f, s)
		}
	} else if k := (runFlow{s.Flow, s.Run}); c.hot != nil && c.hotKey == k {
		f = c.hot
	} else if f = c.otherRun(nil, s); f != nil {
		c.hot, c.hotKey = f, k
	}
	if f == nil {
		c.untracked++
		return
	}
	f.last, f.epoch = c.packets, c.epoch
	switch {
	case f.active && f.held && follows(f.pend, s.Seq) && !(f.pend < f.first && follows(f.first, s.Seq)):
		// The flow moved to the held stamp, which counts now (not when
		// the stamp follows the flow's first as well, for a held stamp
		// behind it: the flow goes on from its first then).
		c.untracked--
		f.held = false
		if f.pend < f.first && f.lone() {
			// The held stamp lies far behind the flow's one stamp so
			// far, and the flow goes on from it: that first stamp was
			// a stray (see MaxSeqAhead). The flow starts again at the
			// held stamp, and the stray counts as untracked.
			c.untracked++
			f.start(f.pend)
		} else {
			f.place(f.pend)
		}
	case f.active && f.lone() && s.Seq < f.first && f.first-s.Seq >= MaxSeqAhead:
		// MaxSeqAhead or more behind the flow's one stamp so far: a
		// stray first, or a packet that late to a sink started in the
		// middle of the flow. Held, as a stamp far ahead is: the flow
		// starts again here if the next stamp follows this one (checked
		// before far, which a first stamp at 2^64-1, whose next wraps to
		// 0, would take every later stamp to be).
		f.held, f.pend, f.heldN = true, s.Seq, 0
		c.untracked++
		return
	case f.active && far(f.next, s.Seq):
		f.held, f.pend, f.heldN = true, s.Seq, 0
		c.untracked++
		return
	case f.held && f.pend < f.first:
		// A stamp that does not follow a held one far behind the flow:
		// the flow goes on from its first, and the held stamp was a
		// late packet, which counts as late now.
		c.untracked--
		f.held = false
		f.place(f.pend)
	case f.held:
		// A stamp near the flow leaves a held one held for a few more (a
		// late packet from before a burst of loss may come between the
		// stamp after the burst and the one that follows it), not for
		// long: a bit of the sequence number flipped again, in a later
		// stamp, must not follow the first.
		if f.heldN++; f.heldN > heldFor {
			f.held = false
		}
	}
	if !f.active {
		*f = flowState{run: s.Run, active: true, last: c.packets, epoch: c.epoch}
		f.start(s.Seq)
		return
	}
	f.place(s.Seq)
}

// lone reports whether f has counted one stamp and nothing else: its
// first, which nothing has confirmed yet.
func (f *flowState) lone() bool { return f.unique == 1 && f.dup == 0 && f.reord == 0 }

// start makes seq the first and only stamp f has counted, keeping its run,
// its clock (last, epoch) and a held stamp.
func (f *flowState) start(seq uint64) {
	f.first, f.next, f.unique, f.reord, f.dup = seq, seq+1, 1, 0, 0
	clear(f.seen[:])
	f.seen[(seq/64)%dupWords] |= 1 << (seq % 64)
}

// place counts the sequence number seq in f, an active flow: ahead of it
// as its highest, within its window as late or a duplicate, older than the
// window as late (see FlowTotals.Reordered).
func (f *flowState) place(seq uint64) {
	w, bit := (seq/64)%dupWords, uint64(1)<<(seq%64)
	switch {
	case seq >= f.next:
		f.advance(seq)
		f.unique++
	case (f.next-1)/64-seq/64 >= dupWords:
		// Older than the window: a late packet or a late repeat, which
		// the flow no longer tells apart. A path that holds packets back
		// (jitter, a slow queue) brings many more of the first than a
		// path repeats packets that late, so it counts as late and makes
		// up for its gap; a repeat that late hides a loss. Far below the
		// lowest sequence number seen it does not widen the flow's span.
		f.reord++
		if seq >= f.first {
			f.unique++
		} else if f.first-seq < dupWindow {
			f.unique++
			f.first = seq
		}
		return
	case f.seen[w]&bit != 0:
		f.dup++
		return
	default:
		f.unique++
		f.reord++
		f.first = min(f.first, seq)
	}
	f.seen[w] |= bit
}

// otherRun returns the flow state for s, whose run is not the one in its
// flow's table entry f (nil for a flow above the table's limit): the
// run's state beside f; f itself, its run folded into the totals, when f's
// run has been quiet for runQuiet packets (the next run of a generator);
// or a new one beside f while f's run is still sending (or beside the
// table), when there is room, or room made by folding a side run as
// quiet. It returns nil when there is none: the packet is untracked.
func (c *Counter) otherRun(f *flowState, s Stamp) *flowState {
	k := runFlow{s.Flow, s.Run}
	if o := c.side[k]; o != nil {
		return o
	}
	if f != nil && c.quiet(f) {
		c.fold(f)
		return f
	}
	if len(c.side) >= maxSideRuns {
		// A new run while 64 are counted beside: a run that stopped
		// makes room. The scan finds none before sideBusy, and a scan
		// that finds none moves sideBusy to the earliest a run beside
		// can turn quiet by its packets, so that a stream of further
		// runs costs one scan per runQuiet packets (or per Age) at
		// most, not one per packet.
		if c.packets <= c.sideBusy {
			return nil
		}
		busy := uint64(math.MaxUint64)
		for k, o := range c.side {
			if c.quiet(o) {
				c.fold(o)
				delete(c.side, k)
				if c.hot == o {
					c.hot = nil
				}
				break
			}
			busy = min(busy, o.last+runQuiet)
		}
		if len(c.side) >= maxSideRuns {
			c.sideBusy = busy
			return nil
		}
	}
	if c.side == nil {
		c.side = make(map[runFlow]*flowState)
	}
	o := new(flowState)
	c.side[k] = o
	return o
}

// quiet reports whether f's run has stopped, as far as the Counter can
// tell: runQuiet packets (of any flow) came since its last, or a whole
// epoch passed without one (Age).
func (c *Counter) quiet(f *flowState) bool {
	return c.packets-f.last > runQuiet || c.epoch >= f.epoch+2
}

// Age starts a new epoch: a run without a packet in a whole epoch (its
// last packet came before the call before this one) counts as stopped,
// however few packets came meanwhile, and its flow makes room for the next
// run. A sink calls it every second, so that a run 1 to 2 s quiet gives
// way to the next even when both are short (70 runs of 200 packets one
// after the other: each counted, not the 65th on untracked).
func (c *Counter) Age() {
	c.epoch++
	c.sideBusy = 0
}

// fold adds the figures of f's run to the totals and makes f free.
func (c *Counter) fold(f *flowState) {
	c.folded.Lost += f.lost()
	c.folded.Reordered += f.reord
	c.folded.Duplicates += f.dup
	c.folded.Flows++
	f.active = false
}

func (c *Counter) grow(n int) {
	size := max(256, len(c.flows))
	for size < n {
		size *= 2
	}
	size = min(size, c.tableLimit())
	flows := make([]flowState, size)
	copy(flows, c.flows)
	c.flows = flows
}

// Totals returns the sums over all flows so far. It takes time in the
// number of flows seen, not of packets.
func (c *Counter) Totals() FlowTotals {
	t := c.folded
	t.Packets = c.packets
	t.Untracked = c.untracked
	add := func(f *flowState) {
		if !f.active {
			return
		}
		t.Flows++
		t.Lost += f.lost()
		t.Reordered += f.reord
		t.Duplicates += f.dup
	}
	for i := range c.flows {
		add(&c.flows[i])
	}
	for _, f := range c.side {
		add(f)
	}
	return t
}

// Reset forgets every flow; the table keeps its size.
func (c *Counter) Reset() {
	clear(c.flows)
	clear(c.side)
	c.hot = nil
	c.packets, c.untracked, c.folded, c.sideBusy, c.epoch = 0, 0, FlowTotals{}, 0, 0
	c.runN = 0
}
