package traffic

// flowState is what a Counter knows of one flow of one generator run.
type flowState struct {
	run    uint32
	active bool
	first  uint64 // lowest sequence number seen
	next   uint64 // highest sequence number seen, plus one
	unique uint64 // packets counted once: all but the duplicates
	reord  uint64
	dup    uint64
}

// lost returns the sequence numbers from first to next-1 that never came.
func (f *flowState) lost() uint64 {
	span := f.next - f.first
	if f.unique >= span {
		return 0
	}
	return span - f.unique
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
	// flow with a higher sequence number: RFC 4737's reordered packets
	// (sequence number below the next expected), duplicates excepted.
	Reordered uint64
	// Duplicates counts the packets whose sequence number equals that of
	// the packet of their flow before them (as the clones of one buffer
	// arrive).
	Duplicates uint64
	// Flows counts the flows seen (a flow of a new run counts again).
	Flows int
	// Untracked counts stamps whose flow number is MaxFlows or more: they
	// count in Packets only.
	Untracked uint64
}

// Counter counts stamped packets per flow, for loss, reordering and
// duplicates. The zero value is ready. A packet whose stamp carries a run
// other than the one its flow had starts that flow afresh, after folding
// the old run's figures into the totals. Add allocates only when a flow
// number above all seen so far arrives (the table grows, up to MaxFlows
// entries). A Counter is not safe for concurrent use.
type Counter struct {
	flows     []flowState
	packets   uint64
	untracked uint64
	folded    FlowTotals // of runs replaced in their flow
}

// Add counts the packet stamped s.
func (c *Counter) Add(s Stamp) {
	c.packets++
	if s.Flow >= MaxFlows {
		c.untracked++
		return
	}
	if int(s.Flow) >= len(c.flows) {
		c.grow(int(s.Flow) + 1)
	}
	f := &c.flows[s.Flow]
	if f.active && f.run != s.Run {
		c.folded.Lost += f.lost()
		c.folded.Reordered += f.reord
		c.folded.Duplicates += f.dup
		c.folded.Flows++
		f.active = false
	}
	switch {
	case !f.active:
		*f = flowState{run: s.Run, active: true, first: s.Seq, next: s.Seq + 1, unique: 1}
	case s.Seq >= f.next:
		f.next = s.Seq + 1
		f.unique++
	case s.Seq == f.next-1:
		f.dup++
	default:
		f.unique++
		f.reord++
		f.first = min(f.first, s.Seq)
	}
}

func (c *Counter) grow(n int) {
	size := max(256, len(c.flows))
	for size < n {
		size *= 2
	}
	size = min(size, MaxFlows)
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
	for i := range c.flows {
		f := &c.flows[i]
		if !f.active {
			continue
		}
		t.Flows++
		t.Lost += f.lost()
		t.Reordered += f.reord
		t.Duplicates += f.dup
	}
	return t
}

// Reset forgets every flow; the table keeps its size.
func (c *Counter) Reset() {
	clear(c.flows)
	c.packets, c.untracked, c.folded = 0, 0, FlowTotals{}
}
