package skb_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// The differential test: random sequences of buffer operations run against
// skb and against a plain byte-slice model of each buffer's contents, headroom,
// sharing group and header offsets. After every step each live buffer must
// agree with its model, and writes (only ever made through a buffer that is
// not shared) must never show in another buffer.

// mbuf is the model of one live buffer.
type mbuf struct {
	b        *skb.Buff
	content  []byte // all Len bytes: linear data, frags, frag list
	headroom int
	group    *group // buffers sharing one data block
	netOff   int    // network header offset from data; -1 when unset
}

type group struct{ n int }

type model struct {
	t    testing.TB
	c    *pool.Cache
	bufs []*mbuf
	seq  byte // pattern byte for new content
	log  []string
}

func (m *model) pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		m.seq++
		p[i] = m.seq
	}
	return p
}

func (m *model) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nsteps:\n  %s", fmt.Sprintf(format, args...), joinLines(m.log))
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for i, l := range s {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}

func (m *model) add(b *skb.Buff, content []byte, headroom int, g *group, netOff int) {
	if g == nil {
		g = &group{}
	}
	g.n++
	m.bufs = append(m.bufs, &mbuf{b: b, content: content, headroom: headroom, group: g, netOff: netOff})
}

// private moves x out of its sharing group: its data is now its own.
func (x *mbuf) private() {
	if x.group.n > 1 {
		x.group.n--
		x.group = &group{n: 1}
	}
}

func (m *model) remove(i int) {
	x := m.bufs[i]
	x.group.n--
	m.bufs = append(m.bufs[:i], m.bufs[i+1:]...)
}

// check compares every live buffer with its model.
func (m *model) check() {
	m.t.Helper()
	for i, x := range m.bufs {
		b := x.b
		if b.Len() != len(x.content) {
			m.fail("buffer %d: len %d, model %d", i, b.Len(), len(x.content))
		}
		if b.HeadLen()+b.DataLen() != b.Len() {
			m.fail("buffer %d: headlen %d + data_len %d != len %d", i, b.HeadLen(), b.DataLen(), b.Len())
		}
		got := make([]byte, b.Len())
		if err := b.CopyBits(0, got); err != nil {
			m.fail("buffer %d: copy bits: %v", i, err)
		}
		if !bytes.Equal(got, x.content) {
			m.fail("buffer %d: contents\n got %x\nwant %x", i, got, x.content)
		}
		if b.Headroom() != x.headroom {
			m.fail("buffer %d: headroom %d, model %d", i, b.Headroom(), x.headroom)
		}
		if b.Dataref() != x.group.n {
			m.fail("buffer %d: dataref %d, model %d", i, b.Dataref(), x.group.n)
		}
		if b.Cloned() != (x.group.n > 1) {
			m.fail("buffer %d: cloned %v with %d sharers", i, b.Cloned(), x.group.n)
		}
		if x.netOff >= 0 && b.NetworkOffset() != x.netOff {
			m.fail("buffer %d: network offset %d, model %d", i, b.NetworkOffset(), x.netOff)
		}
		if b.Tailroom() < 0 || b.Headroom()+b.HeadLen()+b.Tailroom() > b.End() {
			m.fail("buffer %d: headroom %d + headlen %d + tailroom %d > end %d", i, b.Headroom(), b.HeadLen(), b.Tailroom(), b.End())
		}
	}
}

// ops is the operation alphabet; each takes two argument bytes.
var ops = []string{
	"alloc", "reserve", "put", "push", "pull", "trim", "clone", "copy",
	"pskb_copy", "unshare", "cow_head", "expand_head", "linearize",
	"add_rx_frag", "free", "write", "copy_bits", "pskb_trim",
	"pskb_may_pull", "set_network", "copy_expand", "add_frag_list",
}

// step runs operation op with arguments a1 and a2 on the model.
func (m *model) step(op, a1, a2 byte) {
	m.t.Helper()
	name := ops[int(op)%len(ops)]
	if len(m.bufs) == 0 && name != "alloc" {
		name = "alloc"
	}
	var x *mbuf
	xi := 0
	if len(m.bufs) > 0 {
		xi = int(a1) % len(m.bufs)
		x = m.bufs[xi]
	}
	n := int(a2)
	c := m.c
	switch name {
	case "alloc":
		if len(m.bufs) >= 12 {
			return
		}
		size := int(a1) * 8
		b, err := c.Alloc(size)
		if err != nil {
			m.fail("alloc %d: %v", size, err)
		}
		m.logf("alloc %d -> #%d", size, len(m.bufs))
		m.add(b, nil, c.Headroom(), nil, -1)
	case "reserve":
		if x.b.Len() != 0 || n > x.b.Tailroom() {
			return
		}
		m.logf("#%d reserve %d", xi, n)
		x.b.Reserve(n)
		x.headroom += n
		if x.netOff >= 0 {
			x.netOff -= n
		}
	case "put":
		if x.b.IsNonlinear() || x.b.Cloned() || n > x.b.Tailroom() {
			return
		}
		m.logf("#%d put %d", xi, n)
		p := m.pattern(n)
		copy(x.b.Put(n), p)
		x.content = append(x.content, p...)
	case "push":
		if x.b.Cloned() || n > x.b.Headroom() {
			return
		}
		m.logf("#%d push %d", xi, n)
		p := m.pattern(n)
		copy(x.b.Push(n), p)
		x.content = append(p, x.content...)
		x.headroom -= n
		if x.netOff >= 0 {
			x.netOff += n
		}
	case "pull":
		if n > x.b.HeadLen() {
			return
		}
		m.logf("#%d pull %d", xi, n)
		h := x.b.Pull(n)
		if !bytes.Equal(h, x.content[:n]) {
			m.fail("pull returned %x, want %x", h, x.content[:n])
		}
		x.content = x.content[n:]
		x.headroom += n
		if x.netOff >= 0 {
			x.netOff -= n
		}
	case "trim":
		if x.b.IsNonlinear() {
			return
		}
		m.logf("#%d trim %d", xi, n)
		x.b.Trim(n)
		if n < len(x.content) {
			x.content = x.content[:n]
		}
	case "clone":
		nb, err := x.b.Clone(c)
		if err != nil {
			m.fail("clone: %v", err)
		}
		m.logf("#%d clone -> #%d", xi, len(m.bufs))
		m.add(nb, bytes.Clone(x.content), x.headroom, x.group, x.netOff)
	case "copy", "pskb_copy":
		var nb *skb.Buff
		var err error
		if name == "copy" {
			nb, err = x.b.Copy(c)
		} else {
			nb, err = x.b.PskbCopy(c)
		}
		if err != nil {
			if errors.Is(err, pool.ErrTooBig) {
				return
			}
			m.fail("%s: %v", name, err)
		}
		m.logf("#%d %s -> #%d", xi, name, len(m.bufs))
		m.add(nb, bytes.Clone(x.content), x.headroom, nil, x.netOff)
	case "copy_expand":
		hr, tr := int(a2), int(a2)/3
		nb, err := x.b.CopyExpand(c, hr, tr)
		if err != nil {
			if errors.Is(err, pool.ErrTooBig) {
				return
			}
			m.fail("copy_expand: %v", err)
		}
		m.logf("#%d copy_expand %d %d -> #%d", xi, hr, tr, len(m.bufs))
		if nb.Tailroom() < tr {
			m.fail("copy_expand tailroom %d < %d", nb.Tailroom(), tr)
		}
		m.add(nb, bytes.Clone(x.content), hr, nil, x.netOff)
	case "unshare":
		m.logf("#%d unshare", xi)
		if err := x.b.Unshare(c); err != nil {
			if errors.Is(err, pool.ErrTooBig) {
				return
			}
			m.fail("unshare: %v", err)
		}
		x.private()
		if x.b.Cloned() || x.b.IsNonlinear() && x.group.n > 1 {
			m.fail("unshare left a shared buffer")
		}
	case "cow_head":
		m.logf("#%d cow_head %d", xi, n)
		if err := x.b.CowHead(c, n); err != nil {
			if errors.Is(err, pool.ErrTooBig) {
				return
			}
			m.fail("cow_head: %v", err)
		}
		x.private()
		if x.b.Headroom() < n {
			m.fail("cow_head %d left headroom %d", n, x.b.Headroom())
		}
		x.headroom = x.b.Headroom()
	case "expand_head":
		nh, nt := int(a2)%130, int(a2)%70
		m.logf("#%d expand_head %d %d", xi, nh, nt)
		before := x.b.Tailroom()
		if err := x.b.ExpandHead(c, nh, nt); err != nil {
			if errors.Is(err, pool.ErrTooBig) {
				return
			}
			m.fail("expand_head: %v", err)
		}
		x.private()
		x.headroom += nh
		if !x.b.IsNonlinear() && x.b.Tailroom() < before+nt {
			m.fail("expand_head tailroom %d < %d + %d", x.b.Tailroom(), before, nt)
		}
	case "linearize":
		m.logf("#%d linearize", xi)
		shared := x.b.Cloned()
		if err := x.b.Linearize(c); err != nil {
			if errors.Is(err, pool.ErrTooBig) {
				return
			}
			m.fail("linearize: %v", err)
		}
		if x.b.IsNonlinear() {
			m.fail("linearize left %d paged bytes", x.b.DataLen())
		}
		if shared && x.b.Dataref() == 1 {
			x.private()
		}
	case "pskb_may_pull":
		m.logf("#%d pskb_may_pull %d", xi, n)
		shared := x.b.Cloned()
		err := x.b.PskbMayPull(c, n)
		if n > len(x.content) {
			if !errors.Is(err, skb.ErrRange) {
				m.fail("pskb_may_pull past len: %v", err)
			}
			return
		}
		if err != nil {
			if errors.Is(err, pool.ErrTooBig) {
				return
			}
			m.fail("pskb_may_pull: %v", err)
		}
		if x.b.HeadLen() < n {
			m.fail("pskb_may_pull %d left headlen %d", n, x.b.HeadLen())
		}
		if shared && x.b.Dataref() == 1 {
			x.private()
		}
	case "pskb_trim":
		m.logf("#%d pskb_trim %d", xi, n)
		shared := x.b.Cloned()
		if err := x.b.PskbTrim(c, n); err != nil {
			m.fail("pskb_trim: %v", err)
		}
		if n < len(x.content) {
			x.content = x.content[:n]
		}
		if shared && x.b.Dataref() == 1 {
			x.private()
		}
	case "add_rx_frag":
		if x.b.Cloned() || x.b.NrFrags() == skb.MaxFrags || x.b.FragList() != nil {
			return
		}
		size := 1 + n*4
		p, off, err := c.AllocFrag(size)
		if err != nil {
			m.fail("alloc frag: %v", err)
		}
		m.logf("#%d add_rx_frag %d", xi, size)
		pat := m.pattern(size)
		copy(p.Bytes()[off:off+size], pat)
		x.b.AddRxFrag(p, off, size)
		x.content = append(x.content, pat...)
	case "add_frag_list":
		if len(m.bufs) < 2 {
			return
		}
		yi := int(a2) % len(m.bufs)
		y := m.bufs[yi]
		if yi == xi || x.b.Cloned() || y.group.n > 1 || y.b.FragList() != nil || x.b.FragList() != nil {
			return
		}
		m.logf("#%d add_frag_list #%d", xi, yi)
		x.b.AddFragList(y.b)
		x.content = append(x.content, y.content...)
		m.remove(yi) // y now belongs to x's shared info
	case "free":
		m.logf("#%d free", xi)
		if a2&1 == 0 {
			c.Free(x.b)
		} else {
			x.b.Free()
		}
		m.remove(xi)
	case "write":
		if x.b.Cloned() || x.b.HeadLen() == 0 {
			return
		}
		d := x.b.Data()
		off := n % len(d)
		m.seq++
		m.logf("#%d write byte %d at %d", xi, m.seq, off)
		d[off] = m.seq
		x.content[off] = m.seq
	case "copy_bits":
		off, ln := int(a2)%(len(x.content)+1), int(a1)%(len(x.content)+1)
		out := make([]byte, ln)
		err := x.b.CopyBits(off, out)
		if off+ln > len(x.content) {
			if !errors.Is(err, skb.ErrRange) {
				m.fail("copy_bits past the end: %v", err)
			}
			return
		}
		if err != nil || !bytes.Equal(out, x.content[off:off+ln]) {
			m.fail("copy_bits %d %d: %v %x", off, ln, err, out)
		}
	case "set_network":
		if n > x.b.HeadLen() {
			return
		}
		m.logf("#%d set_network %d", xi, n)
		x.b.SetNetworkHeader(n)
		x.netOff = n
	}
	m.check()
}

// run plays the operations encoded in data (three bytes a step) and then
// frees everything; the pool must then hold no buffer in flight.
func runModel(t testing.TB, data []byte) {
	p, err := pool.New(pool.Config{Name: "model", Debug: true, PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewCache()
	m := &model{t: t, c: c}
	for i := 0; i+2 < len(data) && i < 3*300; i += 3 {
		m.step(data[i], data[i+1], data[i+2])
	}
	for len(m.bufs) > 0 {
		c.Free(m.bufs[0].b)
		m.remove(0)
	}
	c.Close()
	if err := p.Close(); err != nil {
		t.Fatalf("%v\nsteps:\n  %s", err, joinLines(m.log))
	}
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 40, 0, 2, 0, 60, 6, 0, 0, 8, 0, 0, 15, 0, 9, 3, 1, 20})
	f.Add([]byte{0, 200, 0, 13, 0, 100, 13, 0, 200, 6, 0, 0, 12, 1, 0, 16, 1, 3, 17, 1, 50})
	f.Add([]byte{0, 10, 0, 2, 0, 10, 0, 20, 0, 21, 0, 1, 6, 0, 0, 18, 0, 5, 14, 1, 0})
	f.Add([]byte{0, 10, 0, 13, 0, 30, 13, 0, 30, 6, 0, 0, 3, 1, 9, 10, 1, 100, 3, 1, 9, 15, 1, 4})
	f.Add([]byte{0, 10, 0, 13, 0, 30, 6, 0, 0, 11, 1, 60, 12, 0, 0, 17, 1, 31, 18, 1, 5})
	f.Fuzz(func(t *testing.T, data []byte) { runModel(t, data) })
}

// TestModelRandom runs long pseudo-random sequences through the model, so
// that the plain test run covers far more than the fuzz seeds.
func TestModelRandom(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for s := range seeds {
		data := make([]byte, 900)
		x := uint32(s)*2654435761 + 1
		for i := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[i] = byte(x)
		}
		runModel(t, data)
	}
}
