package pool

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/skbdev/skb/skb"
)

// poisonFree is the byte freed data is filled with in debug mode, SLUB's
// POISON_FREE (include/linux/poison.h).
const poisonFree = 0x6b

// quarantineLen is how many freed headers debug mode holds back from reuse,
// so that a use after free finds the header still marked free.
const quarantineLen = 4096

// stackDepth is how many frames a debug record keeps per site.
const stackDepth = 16

// record is what debug mode knows about one header.
type record struct {
	live  bool
	alloc []uintptr
	free  []uintptr
}

// debugState is a debug pool's registry of headers.
type debugState struct {
	p          *Pool
	mu         sync.Mutex
	recs       map[*skb.Buff]*record
	quarantine []*skb.Buff
	qnext      int
}

func newDebugState(p *Pool) *debugState {
	installDescriber()
	return &debugState{p: p, recs: make(map[*skb.Buff]*record)}
}

func callers(skip int) []uintptr {
	var pcs [stackDepth]uintptr
	n := runtime.Callers(skip+2, pcs[:])
	return append([]uintptr(nil), pcs[:n]...)
}

// alloc records b as allocated by the caller skip frames up.
func (d *debugState) alloc(b *skb.Buff, skip int) {
	pcs := callers(skip)
	d.mu.Lock()
	r := d.recs[b]
	if r == nil {
		r = &record{}
		d.recs[b] = r
	}
	r.live, r.alloc, r.free = true, pcs, nil
	d.mu.Unlock()
}

// free records b as freed by the caller skip frames up and puts it in
// quarantine. It returns the header that leaves quarantine to be reused, or
// nil.
func (d *debugState) free(b *skb.Buff, skip int) *skb.Buff {
	pcs := callers(skip)
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.recs[b]; r != nil {
		r.live, r.free = false, pcs
	}
	if len(d.quarantine) < quarantineLen {
		d.quarantine = append(d.quarantine, b)
		return nil
	}
	out := d.quarantine[d.qnext]
	d.quarantine[d.qnext] = b
	d.qnext = (d.qnext + 1) % quarantineLen
	return out
}

// poison fills a freed block with poisonFree.
func (d *debugState) poison(s *skb.Shared) { poisonBytes(s.Bytes()) }

// poisonBytes fills mem, a freed block or frag page, with poisonFree.
func poisonBytes(mem []byte) {
	if len(mem) == 0 {
		return
	}
	mem[0] = poisonFree
	for n := 1; n < len(mem); n *= 2 {
		copy(mem[n:], mem[:n])
	}
}

// describe names b's allocation and free sites, or returns "" when b is not
// one of this pool's headers.
func (d *debugState) describe(b *skb.Buff) string {
	d.mu.Lock()
	r := d.recs[b]
	d.mu.Unlock()
	if r == nil {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "buffer %p of pool %s\nallocated at:\n", b, d.p.label())
	writeStack(&sb, r.alloc)
	if r.free != nil {
		sb.WriteString("freed at:\n")
		writeStack(&sb, r.free)
	}
	return sb.String()
}

func writeStack(sb *strings.Builder, pcs []uintptr) {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fmt.Fprintf(sb, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return
		}
	}
}

// Live is one buffer in flight, as Outstanding reports it.
type Live struct {
	// Buff is the buffer. It belongs to whoever holds it: Outstanding does not
	// take ownership, and the caller must not free it on that owner's behalf.
	Buff *skb.Buff
	// Site is the allocation's call stack, one "function\n\tfile:line" per frame.
	Site string
}

// Outstanding lists the buffers in flight with the stacks that allocated them,
// as kmemleak reports unreferenced objects. It needs Config.Debug and returns
// nil without it. Safe for concurrent use.
func (p *Pool) Outstanding() []Live {
	d := p.dbg
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Live
	for b, r := range d.recs {
		if r.live {
			var sb strings.Builder
			writeStack(&sb, r.alloc)
			out = append(out, Live{Buff: b, Site: sb.String()})
		}
	}
	return out
}

var describerOnce sync.Once

// installDescriber makes skb's double-free and use-after-free panics name the
// sites recorded by every debug pool.
func installDescriber() {
	describerOnce.Do(func() {
		skb.SetDescriber(func(b *skb.Buff) string {
			for _, p := range registered() {
				if p.dbg == nil {
					continue
				}
				if s := p.dbg.describe(b); s != "" {
					return s
				}
			}
			return fmt.Sprintf("buffer %p (not tracked by a debug pool)", b)
		})
	})
}
