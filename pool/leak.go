package pool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

var registry struct {
	mu    sync.Mutex
	pools []*Pool
}

func register(p *Pool) {
	registry.mu.Lock()
	registry.pools = append(registry.pools, p)
	registry.mu.Unlock()
}

func unregister(p *Pool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for i, q := range registry.pools {
		if q == p {
			registry.pools = append(registry.pools[:i], registry.pools[i+1:]...)
			return
		}
	}
}

func registered() []*Pool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return append([]*Pool(nil), registry.pools...)
}

// leakError returns an error wrapping ErrLeak that describes p's buffers and
// pages in flight, or nil. Pages a cache holds as its current frag page are
// not leaks.
func (p *Pool) leakError() error {
	st := p.Stats()
	// The depot's record of the pages caches carve from, not the caches'
	// own fields, which their goroutines write meanwhile.
	p.pages.mu.Lock()
	held := len(p.pages.carving)
	pagesIn := int64(p.pages.st.allocs.Load()) - int64(p.pages.st.frees.Load())
	p.pages.mu.Unlock()
	var sb strings.Builder
	for _, c := range st.Classes {
		if c.InFlight != 0 {
			fmt.Fprintf(&sb, " %d %s of %d bytes;", c.InFlight, plural(c.InFlight, "block", "blocks"), c.Size)
		}
	}
	if st.Headers.InFlight != 0 {
		fmt.Fprintf(&sb, " %d %s;", st.Headers.InFlight, plural(st.Headers.InFlight, "buffer", "buffers"))
	}
	if n := pagesIn - int64(held); n != 0 {
		fmt.Fprintf(&sb, " %d %s;", n, plural(n, "page", "pages"))
	}
	if sb.Len() == 0 {
		return nil
	}
	msg := fmt.Sprintf("pool %s:%s", p.label(), strings.TrimSuffix(sb.String(), ";"))
	if live := p.Outstanding(); len(live) > 0 {
		const show = 5
		for i, l := range live {
			if i == show {
				msg += fmt.Sprintf("\n... and %d more", len(live)-show)
				break
			}
			// Only the pointer: the buffer is its holder's, who may be
			// using it on another goroutine.
			msg += fmt.Sprintf("\nbuffer %p allocated at:\n%s", l.Buff, l.Site)
		}
	} else if p.dbg == nil {
		msg += " (Config.Debug shows where they were allocated)"
	}
	return fmt.Errorf("%w: %s", ErrLeak, msg)
}

// CheckLeaks returns an error wrapping ErrLeak that names every pool of this
// process with buffers or pages in flight (with each buffer's allocation site
// for debug pools), or nil when there are none. Buffers held in caches are not
// in flight. Pools closed cleanly are no longer checked. Test binaries call it
// after their tests (package pooltest does); safe for concurrent use.
func CheckLeaks() error {
	var errs []error
	for _, p := range registered() {
		if err := p.leakError(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// label names the pool in messages: its Config.Name quoted, or (unnamed).
func (p *Pool) label() string {
	if p.cfg.Name == "" {
		return "(unnamed)"
	}
	return strconv.Quote(p.cfg.Name)
}

// plural returns one when n is 1 and many otherwise.
func plural[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
