package skb_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// mustPanic runs f and checks that it panics with a message containing every
// one of want.
func mustPanic(t *testing.T, f func(), want ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic; want one mentioning %q", want)
		}
		msg := fmt.Sprint(r)
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Fatalf("panic %q does not mention %q", msg, w)
			}
		}
	}()
	f()
}

func TestGeometry(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, err := c.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(b)
	end := b.End()
	if b.Headroom() != skb.DefaultHeadroom || b.Len() != 0 || b.Tailroom() != end-skb.DefaultHeadroom || end != pool.FrameSize {
		t.Fatalf("fresh buffer: headroom %d len %d tailroom %d end %d", b.Headroom(), b.Len(), b.Tailroom(), end)
	}
	steps := []struct {
		name                    string
		op                      func()
		headroom, len, tailroom int
		data                    string
	}{
		{"reserve", func() { b.Reserve(16) }, 144, 0, end - 144, ""},
		{"put", func() { copy(b.Put(5), "hello") }, 144, 5, end - 149, "hello"},
		{"push", func() { copy(b.Push(3), "abc") }, 141, 8, end - 149, "abchello"},
		{"pull", func() {
			if h := b.Pull(2); string(h) != "ab" {
				t.Fatalf("pulled %q", h)
			}
		}, 143, 6, end - 149, "chello"},
		{"trim", func() { b.Trim(4) }, 143, 4, end - 147, "chel"},
		{"trim longer is a no-op", func() { b.Trim(100) }, 143, 4, end - 147, "chel"},
		{"put zero", func() { b.Put(0) }, 143, 4, end - 147, "chel"},
		{"push all headroom", func() { b.Push(143) }, 0, 147, end - 147, "*"},
		{"pull it back", func() { b.Pull(143) }, 143, 4, end - 147, "chel"},
		{"trim to empty", func() { b.Trim(0) }, 143, 0, end - 143, ""},
		{"give headroom back", func() { b.Reserve(-143) }, 0, 0, end, ""},
	}
	for _, s := range steps {
		s.op()
		if b.Headroom() != s.headroom || b.Len() != s.len || b.HeadLen() != s.len || b.Tailroom() != s.tailroom {
			t.Fatalf("%s: headroom %d len %d headlen %d tailroom %d; want %d %d %d", s.name, b.Headroom(), b.Len(), b.HeadLen(), b.Tailroom(), s.headroom, s.len, s.tailroom)
		}
		if s.data != "*" && string(b.Data()) != s.data {
			t.Fatalf("%s: data %q, want %q", s.name, b.Data(), s.data)
		}
	}
}

func TestMisusePanics(t *testing.T) {
	c := newCache(t, pool.Config{})
	fresh := func() *skb.Buff {
		b, err := c.Alloc(100)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Free(b) })
		return b
	}
	tests := []struct {
		name string
		f    func(b *skb.Buff)
		want []string
	}{
		{"push past headroom", func(b *skb.Buff) { b.Push(129) }, []string{"push 129 past the headroom", "data 128", "tail 128"}},
		{"put past end", func(b *skb.Buff) { b.Put(b.Tailroom() + 1) }, []string{"put 385 past the end", "end 512"}},
		{"pull past len", func(b *skb.Buff) { b.Put(10); b.Pull(11) }, []string{"pull 11 past the data", "len 10"}},
		{"negative put", func(b *skb.Buff) { b.Put(-1) }, []string{"put -1 is negative"}},
		{"negative may pull", func(b *skb.Buff) { b.PskbMayPull(nil, -1) }, []string{"pskb_may_pull of -1 bytes", "len 0"}},
		{"negative push", func(b *skb.Buff) { b.Push(-1) }, []string{"push -1"}},
		{"negative trim", func(b *skb.Buff) { b.Trim(-1) }, []string{"trim -1"}},
		{"reserve on data", func(b *skb.Buff) { b.Put(1); b.Reserve(1) }, []string{"reserve 1 on a buffer holding data"}},
		{"reserve past end", func(b *skb.Buff) { b.Reserve(5000) }, []string{"reserve 5000 past the end"}},
		{"reserve before head", func(b *skb.Buff) { b.Reserve(-129) }, []string{"reserve -129 past the headroom"}},
		{"reserve MaxInt", func(b *skb.Buff) { b.Reserve(math.MaxInt) }, []string{fmt.Sprintf("reserve %d past the end", math.MaxInt)}},
		{"reserve MinInt", func(b *skb.Buff) { b.Reserve(math.MinInt) }, []string{fmt.Sprintf("reserve %d past the headroom", math.MinInt)}},
		{"put on shared", func(b *skb.Buff) {
			n := c.Clone(b)
			defer c.Free(n)
			b.Put(1)
		}, []string{"put 1 on data shared by 2 buffers", "Unshare"}},
		{"push on shared clone", func(b *skb.Buff) {
			n := c.Clone(b)
			defer c.Free(n)
			n.Push(4)
		}, []string{"push 4 on data shared by 2 buffers"}},
		{"put on nonlinear", func(b *skb.Buff) {
			p, off, err := c.AllocFrag(10)
			if err != nil {
				t.Fatal(err)
			}
			b.AddRxFrag(p, off, 10)
			b.Put(1)
		}, []string{"put 1 on a nonlinear buffer"}},
		{"pull past linear", func(b *skb.Buff) {
			p, off, _ := c.AllocFrag(10)
			b.Put(4)
			b.AddRxFrag(p, off, 10)
			b.Pull(6)
		}, []string{"pull 6 past the linear data (4 bytes; PskbMayPull first)", "len 14 data_len 10"}},
		{"pull past nonlinear end", func(b *skb.Buff) {
			p, off, _ := c.AllocFrag(10)
			b.Put(4)
			b.AddRxFrag(p, off, 10)
			b.Pull(15)
		}, []string{"pull 15 past the data", "len 14"}},
		{"trim nonlinear", func(b *skb.Buff) {
			p, off, _ := c.AllocFrag(10)
			b.AddRxFrag(p, off, 10)
			b.Trim(5)
		}, []string{"trim 5 on a nonlinear buffer"}},
		{"frag outside page", func(b *skb.Buff) {
			p, off, _ := c.AllocFrag(10)
			defer p.Put()
			b.AddRxFrag(p, off, pool.DefaultPageSize)
		}, []string{"outside a page"}},
		{"frag offset MaxInt", func(b *skb.Buff) {
			p, _, _ := c.AllocFrag(10)
			defer p.Put()
			b.AddRxFrag(p, math.MaxInt, 1)
		}, []string{fmt.Sprintf("frag off %d size 1 outside a page", math.MaxInt)}},
		{"frag size MaxInt", func(b *skb.Buff) {
			p, _, _ := c.AllocFrag(10)
			defer p.Put()
			b.AddRxFrag(p, 1, math.MaxInt)
		}, []string{fmt.Sprintf("frag off 1 size %d outside a page", math.MaxInt)}},
		{"frag index", func(b *skb.Buff) { b.Frag(0) }, []string{"frag 0 of 0"}},
		{"header outside block", func(b *skb.Buff) { b.SetNetworkHeader(-200) }, []string{"header offset -200 outside the block"}},
		{"expand negative", func(b *skb.Buff) { b.ExpandHead(c, -1, 0) }, []string{"expand head by -1"}},
		{"expand negative tail", func(b *skb.Buff) { b.ExpandHead(c, math.MaxInt, -1) }, []string{fmt.Sprintf("expand head by %d and tail by -1", math.MaxInt)}},
		{"cow head negative", func(b *skb.Buff) { b.CowHead(c, -1) }, []string{"cow head with headroom -1", "data 128"}},
		{"copy expand negative", func(b *skb.Buff) { b.CopyExpand(c, math.MaxInt, -1) }, []string{fmt.Sprintf("copy with headroom %d tailroom -1", math.MaxInt)}},
		{"gso range", func(b *skb.Buff) { b.SetGSO(70000, 1, skb.GSOUDPL4) }, []string{"gso_size 70000"}},
		{"queue mapping range", func(b *skb.Buff) { b.SetQueueMapping(1 << 16) }, []string{"queue mapping 65536"}},
		{"own frag list", func(b *skb.Buff) { b.AddFragList(b) }, []string{"own frag list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fresh()
			mustPanic(t, func() { tt.f(b) }, tt.want...)
		})
	}
}

// TestImpossibleSizes checks that the operations which add sizes given by the
// caller to a buffer's own return ErrTooBig when the sum is more than any
// block holds, also when it overflows an int, leaving the buffer as it was and
// taking nothing from the allocator (the pool's Close in newCache's cleanup
// finds anything left behind).
func TestImpossibleSizes(t *testing.T) {
	c := newCache(t, pool.Config{})
	p := c.Pool()
	tests := []struct {
		name string
		f    func(b *skb.Buff, a skb.Allocator) error
	}{
		{"expand head by 1<<30", func(b *skb.Buff, a skb.Allocator) error { return b.ExpandHead(a, 1<<30, 0) }},
		{"expand both by MaxInt", func(b *skb.Buff, a skb.Allocator) error { return b.ExpandHead(a, math.MaxInt, math.MaxInt) }},
		{"expand head by MaxInt", func(b *skb.Buff, a skb.Allocator) error { return b.ExpandHead(a, math.MaxInt, 0) }},
		{"expand tail by MaxInt", func(b *skb.Buff, a skb.Allocator) error { return b.ExpandHead(a, 0, math.MaxInt) }},
		{"expand to wrap to 0", func(b *skb.Buff, a skb.Allocator) error {
			return b.ExpandHead(a, math.MaxInt, math.MaxInt-b.End()+2) // adds up to 0 in int arithmetic
		}},
		{"cow head MaxInt", func(b *skb.Buff, a skb.Allocator) error { return b.CowHead(a, math.MaxInt) }},
		{"cow head MaxInt without headroom", func(b *skb.Buff, a skb.Allocator) error { return b.CowHead(a, math.MaxInt) }},
		{"cow head MaxInt-32 without headroom", func(b *skb.Buff, a skb.Allocator) error { return b.CowHead(a, math.MaxInt-32) }},
		{"copy expand MaxInt, 1", func(b *skb.Buff, a skb.Allocator) error {
			n, err := b.CopyExpand(a, math.MaxInt, 1)
			if n != nil {
				n.FreeTo(a)
			}
			return err
		}},
		{"copy expand 1, MaxInt", func(b *skb.Buff, a skb.Allocator) error {
			n, err := b.CopyExpand(a, 1, math.MaxInt)
			if n != nil {
				n.FreeTo(a)
			}
			return err
		}},
		{"copy expand MaxInt, MaxInt", func(b *skb.Buff, a skb.Allocator) error {
			n, err := b.CopyExpand(a, math.MaxInt, math.MaxInt)
			if n != nil {
				n.FreeTo(a)
			}
			return err
		}},
	}
	for _, alloc := range []struct {
		name string
		a    skb.Allocator
	}{{"cache", c}, {"pool", p}} {
		for _, tt := range tests {
			t.Run(alloc.name+"/"+tt.name, func(t *testing.T) {
				b, err := c.Alloc(100)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Free(b)
				copy(b.Put(100), bytes.Repeat([]byte("x"), 100))
				if strings.HasSuffix(tt.name, "without headroom") {
					copy(b.Push(b.Headroom()), bytes.Repeat([]byte("y"), b.Headroom()))
				}
				headroom, data := b.Headroom(), bytes.Clone(b.Data())
				before := p.Stats()
				var got error
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("panicked: %v", r)
						}
					}()
					got = tt.f(b, alloc.a)
				}()
				if !errors.Is(got, skb.ErrTooBig) {
					t.Errorf("err %v, want ErrTooBig", got)
				}
				if b.Headroom() != headroom || b.End() != pool.SmallSize || b.Cloned() || !bytes.Equal(b.Data(), data) {
					t.Errorf("buffer changed: headroom %d end %d data %q", b.Headroom(), b.End(), b.Data())
				}
				after := p.Stats()
				for i := range after.Classes {
					if after.Classes[i].InFlight != before.Classes[i].InFlight {
						t.Errorf("blocks of %d bytes in flight: %d before, %d after", after.Classes[i].Size, before.Classes[i].InFlight, after.Classes[i].InFlight)
					}
				}
				if after.InFlight() != before.InFlight() {
					t.Errorf("buffers in flight: %d before, %d after", before.InFlight(), after.InFlight())
				}
			})
		}
	}
}

func TestDoubleFreeNamesSites(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(10)
	c.Free(b)
	mustPanic(t, func() { c.Free(b) }, "double free", "allocated at:", "TestDoubleFreeNamesSites", "freed at:", "given to Xmit twice")
	mustPanic(t, func() { b.Free() }, "double free", "given to Xmit twice")
}

// TestCloneOfFreed checks that cloning a freed buffer panics, in every build:
// it would revive the freed header and corrupt the pool's count.
func TestCloneOfFreed(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(10)
	c.Free(b)
	mustPanic(t, func() { c.Clone(b) }, "clone of a freed buffer")
	mustPanic(t, func() { b.Clone(c) }, "freed")
}

func TestChecksumState(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(100)
	defer c.Free(b)
	b.Put(60)
	if b.IPSummed() != skb.ChecksumNone || b.IPSummed().String() != "CHECKSUM_NONE" {
		t.Fatalf("fresh state %v", b.IPSummed())
	}
	for _, bad := range [][2]int{{-1, 0}, {59, 0}, {20, 40}, {0, 70000}} {
		if err := b.SetChecksumPartial(bad[0], bad[1]); !errors.Is(err, skb.ErrRange) {
			t.Fatalf("SetChecksumPartial(%d, %d) = %v, want ErrRange", bad[0], bad[1], err)
		}
	}
	if err := b.SetChecksumPartial(34, 6); err != nil {
		t.Fatal(err)
	}
	b.Push(14)
	if b.IPSummed() != skb.ChecksumPartial || b.CsumStart() != 48 || b.CsumOffset() != 6 {
		t.Fatalf("after push: %v start %d offset %d", b.IPSummed(), b.CsumStart(), b.CsumOffset())
	}
	if err := b.CowHead(c, 300); err != nil {
		t.Fatal(err)
	}
	if b.Headroom() < 300 || b.CsumStart() != 48 {
		t.Fatalf("after cow_head: headroom %d start %d", b.Headroom(), b.CsumStart())
	}
	if err := b.ExpandHead(c, 64, 64); err != nil {
		t.Fatal(err)
	}
	if b.CsumStart() != 48 {
		t.Fatalf("after expand_head: start %d", b.CsumStart())
	}
	for _, hr := range []int{0, 17, 1000} {
		n, err := b.CopyExpand(c, hr, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n.Headroom() != hr || n.CsumStart() != 48 || n.CsumOffset() != 6 || n.IPSummed() != skb.ChecksumPartial {
			t.Fatalf("copy with headroom %d: headroom %d start %d", hr, n.Headroom(), n.CsumStart())
		}
		c.Free(n)
	}
	b.SetChecksumComplete(0x1234)
	if b.IPSummed() != skb.ChecksumComplete || b.Csum() != 0x1234 {
		t.Fatal("complete")
	}
	b.SetChecksumUnnecessary()
	if b.IPSummed().String() != "CHECKSUM_UNNECESSARY" {
		t.Fatal(b.IPSummed())
	}
	b.SetChecksumNone()
	if b.IPSummed() != skb.ChecksumNone {
		t.Fatal(b.IPSummed())
	}
}

func TestHeaderOffsets(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(200)
	defer c.Free(b)
	copy(b.Put(42), bytes.Repeat([]byte{7}, 42))
	if b.MacHeaderWasSet() || b.NetworkHeaderWasSet() || b.TransportHeaderWasSet() || b.MacHeader() != nil || b.MacLen() != 0 {
		t.Fatal("fresh buffer has headers set")
	}
	b.ResetMacHeader()
	b.SetNetworkHeader(14)
	b.SetTransportHeader(34)
	check := func(step string, mac, nw, tr int) {
		t.Helper()
		if b.MacOffset() != mac || b.NetworkOffset() != nw || b.TransportOffset() != tr || b.MacLen() != 14 {
			t.Fatalf("%s: offsets %d %d %d maclen %d; want %d %d %d", step, b.MacOffset(), b.NetworkOffset(), b.TransportOffset(), b.MacLen(), mac, nw, tr)
		}
		if len(b.TransportHeader()) != 42-34-(0-mac)+mac-mac && len(b.TransportHeader()) != 8 {
			t.Fatalf("%s: transport header %d bytes", step, len(b.TransportHeader()))
		}
	}
	check("set", 0, 14, 34)
	b.Pull(14)
	check("pull", -14, 0, 20)
	if len(b.MacHeader()) != 42 || len(b.NetworkHeader()) != 28 {
		t.Fatalf("header slices %d %d", len(b.MacHeader()), len(b.NetworkHeader()))
	}
	b.Push(14)
	check("push", 0, 14, 34)
	if err := b.ExpandHead(c, 100, 0); err != nil {
		t.Fatal(err)
	}
	check("expand", 0, 14, 34)
	n, _ := b.CopyExpand(c, 0, 0)
	defer c.Free(n)
	if n.MacOffset() != 0 || n.NetworkOffset() != 14 || n.TransportOffset() != 34 {
		t.Fatalf("copy: %d %d %d", n.MacOffset(), n.NetworkOffset(), n.TransportOffset())
	}
	b.ResetNetworkHeader()
	b.ResetTransportHeader()
	if b.NetworkOffset() != 0 || b.TransportOffset() != 0 {
		t.Fatal("reset")
	}
}

func TestMetadata(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(10)
	b.SetProtocol(0x86dd)
	b.SetPriority(6)
	b.SetMark(0xabc)
	b.SetHash(0xdeadbeef, true)
	b.SetQueueMapping(3)
	b.SetTstamp(1234567890)
	b.SetGSO(1400, 10, skb.GSOUDPL4)
	copy(b.CB()[:], "peer 7")
	check := func(x *skb.Buff) {
		t.Helper()
		if string(x.CB()[:6]) != "peer 7" {
			t.Fatalf("control block lost: %q", x.CB()[:6])
		}
		h, l4 := x.Hash()
		if x.Protocol() != 0x86dd || x.Priority() != 6 || x.Mark() != 0xabc || h != 0xdeadbeef || !l4 || x.QueueMapping() != 3 || x.Tstamp() != 1234567890 {
			t.Fatalf("metadata lost: %v %v %v %v %v %v", x.Protocol(), x.Priority(), x.Mark(), h, x.QueueMapping(), x.Tstamp())
		}
		if x.GSOSize() != 1400 || x.GSOSegs() != 10 || x.GSOType() != skb.GSOUDPL4 || !x.IsGSO() {
			t.Fatalf("gso lost: %d %d %v", x.GSOSize(), x.GSOSegs(), x.GSOType())
		}
	}
	check(b)
	for name, mk := range map[string]func() (*skb.Buff, error){
		"clone":     func() (*skb.Buff, error) { return b.Clone(c) },
		"copy":      func() (*skb.Buff, error) { return b.Copy(c) },
		"pskb_copy": func() (*skb.Buff, error) { return b.PskbCopy(c) },
	} {
		n, err := mk()
		if err != nil {
			t.Fatal(name, err)
		}
		check(n)
		c.Free(n)
	}
	c.Free(b)
	b2, _ := c.Alloc(10)
	defer c.Free(b2)
	h, _ := b2.Hash()
	if b2.Protocol() != 0 || b2.Mark() != 0 || h != 0 || b2.IsGSO() || b2.Tstamp() != 0 {
		t.Fatal("reused buffer keeps metadata: the clear before dataref missed a field")
	}
}

// TestFragListMisuse checks that AddFragList refuses, with a panic that
// says why and before changing anything, a nil buffer, a freed one, one
// already on the list, and a chain that loops; the length it adds stays
// right, and everything is freed once.
func TestFragListMisuse(t *testing.T) {
	c := newCache(t, pool.Config{})
	a, _ := c.Alloc(10)
	x, _ := c.Alloc(10)
	x.Put(10)
	a.AddFragList(x)
	mustPanic(t, func() { a.AddFragList(nil) }, "nil buffer")
	mustPanic(t, func() { a.AddFragList(x) }, "added twice")
	y, _ := c.Alloc(10)
	z, _ := c.Alloc(10)
	y.AddFragList(z)
	mustPanic(t, func() { z.AddFragList(y) }, "own frag list")
	f, _ := c.Alloc(10)
	c.Free(f)
	mustPanic(t, func() { a.AddFragList(f) }, "freed buffer")
	if a.Len() != 10 || a.DataLen() != 10 {
		t.Fatalf("after the refused adds: len %d, data len %d; want 10, 10", a.Len(), a.DataLen())
	}
	c.Free(a)
	c.Free(y)
}

// TestSetDestructorOnClone checks that SetDestructor, which writes the
// shared info, refuses a cloned buffer as SetGSO does.
func TestSetDestructorOnClone(t *testing.T) {
	c := newCache(t, pool.Config{})
	a, _ := c.Alloc(10)
	k := c.Clone(a)
	mustPanic(t, func() { a.SetDestructor(func(*skb.Buff) {}) }, "set destructor", "shared by 2")
	c.Free(k)
	a.SetDestructor(func(*skb.Buff) {}) // alone again: allowed
	c.Free(a)
}

// TestNilArguments checks that the operations given a nil allocator or page
// panic with a message naming what is missing, not a nil dereference.
func TestNilArguments(t *testing.T) {
	c := newCache(t, pool.Config{})
	a, _ := c.Alloc(10)
	a.Put(10)
	k := c.Clone(a)
	mustPanic(t, func() { a.Clone(nil) }, "clone with a nil Allocator")
	mustPanic(t, func() { a.Copy(nil) }, "copy with a nil Allocator")
	mustPanic(t, func() { a.PskbCopy(nil) }, "pskb copy with a nil Allocator")
	mustPanic(t, func() { k.Unshare(nil) }, "unshare with a nil Allocator")
	mustPanic(t, func() { a.ExpandHead(nil, 10, 0) }, "expand head with a nil Allocator")
	mustPanic(t, func() { a.AddRxFrag(nil, 0, 10) }, "nil page")
	c.Free(k)
	c.Free(a)
}

// TestCopyNonlinearInLargeBlock copies and unshares a nonlinear packet whose
// linear part sits in the largest class (3000 bytes of it, in a 68 KiB
// block) with a 1000-byte page frag: the copy keeps the headroom and the
// tailroom Tailroom reports (none, for a nonlinear buffer), so it fits a
// block, where keeping the old block's slack as well would need one larger
// than any.
func TestCopyNonlinearInLargeBlock(t *testing.T) {
	c := newCache(t, pool.Config{})
	build := func() *skb.Buff {
		b, err := c.Alloc(3000)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := 0, b.Put(3000); i < len(p); i++ {
			p[i] = byte(i)
		}
		pg, off, err := c.AllocFrag(1000)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			pg.Bytes()[off+i] = byte(3000 + i)
		}
		b.AddRxFrag(pg, off, 1000)
		return b
	}
	check := func(what string, n *skb.Buff, hr int) {
		t.Helper()
		if n.IsNonlinear() || n.Len() != 4000 || n.Headroom() != hr {
			t.Fatalf("%s: nonlinear %v len %d headroom %d; want linear, 4000, %d", what, n.IsNonlinear(), n.Len(), n.Headroom(), hr)
		}
		for i, v := range n.Data() {
			if v != byte(i) {
				t.Fatalf("%s: byte %d is %d, want %d", what, i, v, byte(i))
			}
		}
	}
	b := build()
	hr := b.Headroom()
	n, err := b.Copy(c)
	if err != nil {
		t.Fatalf("Copy of a 4000-byte packet (3000 linear in a %d-byte block, 1000 in a frag): %v", b.End(), err)
	}
	check("Copy", n, hr)
	c.Free(n)
	cl := c.Clone(b)
	if err := cl.Unshare(c); err != nil {
		t.Fatalf("Unshare of a clone of that packet: %v", err)
	}
	check("Unshare", cl, hr)
	c.Free(cl)
	c.Free(b)
}

// TestCopyShortHeadroom copies a received frame whose mac header was
// pulled (eth_type_trans) into buffers with less headroom than the pulled
// 14 bytes, and with enough: an offset before the copy's head is unset
// (its bytes were not copied), one inside it points at the same bytes;
// CHECKSUM_PARTIAL whose csum_start was pulled away becomes CHECKSUM_NONE.
func TestCopyShortHeadroom(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, err := c.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(b)
	p := b.Put(60)
	for i := range p {
		p[i] = byte(i)
	}
	b.ResetMacHeader()
	if err := b.SetChecksumPartial(14, 6); err != nil {
		t.Fatal(err)
	}
	b.Pull(14)
	b.ResetNetworkHeader()
	for _, hr := range []int{0, 13, 14, 20} {
		n, err := b.CopyExpand(c, hr, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !n.NetworkHeaderWasSet() || n.NetworkOffset() != 0 || n.Data()[0] != 14 {
			t.Errorf("headroom %d: network header set %v at %d", hr, n.NetworkHeaderWasSet(), n.NetworkOffset())
		}
		if hr < 14 {
			if n.MacHeaderWasSet() || n.MacLen() != 0 || n.MacHeader() != nil {
				t.Errorf("headroom %d: mac header set %v at %d, len %d; want unset", hr, n.MacHeaderWasSet(), n.MacOffset(), n.MacLen())
			}
		} else if !n.MacHeaderWasSet() || n.MacOffset() != -14 || n.MacLen() != 14 || n.MacHeader()[0] != 0 {
			t.Errorf("headroom %d: mac header set %v at %d, len %d; want at -14, 14 bytes", hr, n.MacHeaderWasSet(), n.MacOffset(), n.MacLen())
		}
		// csum_start at the network header, the data's first byte.
		if n.IPSummed() != skb.ChecksumPartial || n.CsumStart() != 0 {
			t.Errorf("headroom %d: checksum %v start %d; want CHECKSUM_PARTIAL at 0", hr, n.IPSummed(), n.CsumStart())
		}
		c.Free(n)
	}
	b.Push(14)
	if err := b.SetChecksumPartial(0, 6); err != nil { // csum_start at the mac header
		t.Fatal(err)
	}
	b.Pull(14)
	for _, hr := range []int{0, 14} {
		n, err := b.CopyExpand(c, hr, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]skb.CsumState{true: skb.ChecksumNone, false: skb.ChecksumPartial}[hr < 14]; n.IPSummed() != want {
			t.Errorf("headroom %d: checksum %v, want %v", hr, n.IPSummed(), want)
		}
		c.Free(n)
	}
}

// countRecycler counts the pages given back to it.
type countRecycler struct{ n int }

func (r *countRecycler) RecyclePage(*skb.Page) { r.n++ }

// TestPageMisuseKeepsCount checks that a Put or Get on a page with no
// reference panics with the page and leaves its count at 0, so that code
// that recovers finds it as it was, and the page is recycled once.
func TestPageMisuseKeepsCount(t *testing.T) {
	var p skb.Page
	rec := &countRecycler{}
	p.InitPage(make([]byte, 64), 0x1000, rec)
	p.ResetRefs()
	p.Put() // the last reference: recycled
	mustPanic(t, p.Put, "put on free page 0x1000 (refs 0)")
	mustPanic(t, p.Get, "get on free page 0x1000")
	if p.Refs() != 0 || rec.n != 1 {
		t.Errorf("refs %d, recycled %d times; want 0 and once", p.Refs(), rec.n)
	}
}

// TestCowHeadCompact checks CowHead on buffers whose head is much larger
// than their data: a clone of one segment of a 64 KiB train (a GRO
// receive's), and a buffer of the largest class with short headroom. Each
// gets the headroom asked for in a block of its data's size, its bytes and
// the header pulled in front of them kept, and the train's other segments
// untouched.
func TestCowHeadCompact(t *testing.T) {
	c := newCache(t, pool.Config{})
	const seg, segs = 1000, 46
	train, err := c.Alloc(seg * segs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(train)
	p := train.Put(seg * segs)
	for i := range p {
		p[i] = byte(i / seg)
	}
	for _, i := range []int{0, 1, 17, segs - 1} {
		s, err := train.Clone(c)
		if err != nil {
			t.Fatal(err)
		}
		s.Pull(i * seg)
		s.Trim(seg)
		s.ResetMacHeader()
		s.Pull(14)
		if err := s.CowHead(c, 8); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
		if s.Cloned() || s.End() > pool.FrameSize || s.Headroom() < 14 || s.Len() != seg-14 {
			t.Errorf("segment %d: cloned %v, end %d, headroom %d, len %d; want a private 2 KiB block", i, s.Cloned(), s.End(), s.Headroom(), s.Len())
		}
		if !s.MacHeaderWasSet() || s.MacOffset() != -14 || s.MacHeader()[0] != byte(i) {
			t.Errorf("segment %d: mac header set %v at %d", i, s.MacHeaderWasSet(), s.MacOffset())
		}
		copy(s.Push(22), "XXXXXXXXXXXXXXXXXXXXXX")
		for j, v := range s.Data()[22:] {
			if v != byte(i) {
				t.Fatalf("segment %d: byte %d is %d", i, j, v)
			}
		}
		c.Free(s)
	}
	for j, v := range train.Data() {
		if v != byte(j/seg) {
			t.Fatalf("train byte %d is %d after the segments' CowHead", j, v)
		}
	}

	// The largest class, 4 bytes of headroom: the kernel's way would need
	// a block 64 bytes larger than any.
	b, err := c.Alloc(pool.LargeSize - skb.DefaultHeadroom)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Free(b) }()
	b.Reserve(b.Tailroom() - 4)
	b.Push(b.Headroom() - 4)
	b.Trim(0)
	copy(b.Put(5), "hello")
	if err := b.CowHead(c, 8); err != nil {
		t.Fatalf("cow head 8 on a %d-byte block with headroom %d: %v", b.End(), b.Headroom(), err)
	}
	if b.Headroom() < 8 || string(b.Data()) != "hello" || b.End() > pool.SmallSize {
		t.Errorf("headroom %d, data %q, end %d", b.Headroom(), b.Data(), b.End())
	}
	if err := b.CowHead(c, pool.LargeSize); !errors.Is(err, skb.ErrTooBig) {
		t.Errorf("cow head %d: %v, want ErrTooBig", pool.LargeSize, err)
	}
}

// TestCowHeadCompactKeeps checks what CowHead's compact copy keeps: a
// header pulled further in front of the data than the headroom it would
// give (offsets are stored plus one: a header 129 bytes back must not land
// on "unset"), and the destructor of a buffer that was its block's only
// holder, which moves with the data rather than run at CowHead.
func TestCowHeadCompactKeeps(t *testing.T) {
	c := newCache(t, pool.Config{})
	for _, back := range []int{100, 128, 129, 200, 1000} {
		train, err := c.Alloc(8000)
		if err != nil {
			t.Fatal(err)
		}
		p := train.Put(8000)
		for i := range p {
			p[i] = byte(i)
		}
		s, err := train.Clone(c)
		if err != nil {
			t.Fatal(err)
		}
		s.Pull(3000)
		s.Trim(2000)
		s.ResetMacHeader()
		first := s.Data()[0]
		s.Pull(back)
		if err := s.CowHead(c, 8); err != nil {
			t.Fatal(err)
		}
		if !s.MacHeaderWasSet() || s.MacOffset() != -back || s.MacHeader()[0] != first {
			t.Errorf("header %d bytes back: set %v at %d; want at -%d, first byte %d", back, s.MacHeaderWasSet(), s.MacOffset(), back, first)
		}
		c.Free(s)
		c.Free(train)
	}

	b, err := c.Alloc(pool.LargeSize - skb.DefaultHeadroom)
	if err != nil {
		t.Fatal(err)
	}
	b.Reserve(b.Tailroom() - 4)
	b.Push(b.Headroom() - 4)
	b.Trim(0)
	copy(b.Put(5), "hello")
	ran := 0
	b.SetDestructor(func(*skb.Buff) { ran++ })
	if err := b.CowHead(c, 8); err != nil {
		t.Fatal(err)
	}
	if ran != 0 {
		t.Errorf("the destructor ran %d times at CowHead; want it kept for the Free", ran)
	}
	c.Free(b)
	if ran != 1 {
		t.Errorf("the destructor ran %d times in all; want 1", ran)
	}
}

// bigPageRecycler takes back the test's one large page: nothing to do.
type bigPageRecycler struct{}

func (bigPageRecycler) RecyclePage(*skb.Page) {}

// TestPushPastLargestPacket grows a packet with frags of one 256 MiB page
// (virtual memory the test never touches) to 50 bytes under 4 GiB: a Push
// of 100 must panic naming the limit, not wrap the packet's 32-bit length.
func TestPushPastLargestPacket(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(100)
	defer c.Free(b)
	b.Put(100)
	var pg skb.Page
	pg.InitPage(make([]byte, 1<<28), 0, bigPageRecycler{})
	pg.ResetRefs()
	if uint64(math.MaxInt) < math.MaxUint32 {
		t.Skip("a packet of 4 GiB needs a 64-bit int")
	}
	for left := uint64(math.MaxUint32 - 100 - 50); left > 0; {
		n := min(left, 1<<28)
		if left > n {
			pg.Get()
		}
		b.AddRxFrag(&pg, 0, int(n))
		left -= n
	}
	mustPanic(t, func() { b.Push(100) }, "push 100 past the largest packet")
	if want := uint64(math.MaxUint32 - 50); b.Len() != b.HeadLen()+b.DataLen() || uint64(b.Len()) != want {
		t.Errorf("after the refused Push: len %d, headlen %d + datalen %d; want %d, unchanged", b.Len(), b.HeadLen(), b.DataLen(), want)
	}
	b.Push(50) // to the last byte: allowed
}

// TestLinearizeWithoutSlack linearizes a packet that fits the largest class
// only without the 128 bytes of slack a pull adds to the tailroom: it must
// fit, not fail with ErrTooBig.
func TestLinearizeWithoutSlack(t *testing.T) {
	c := newCache(t, pool.Config{Classes: []pool.Class{{Size: 2048}, {Size: 2200}}})
	b, err := c.Alloc(1800)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(b)
	copy(b.Put(1900), bytes.Repeat([]byte{'h'}, 1900))
	pg, off, err := c.AllocFrag(50)
	if err != nil {
		t.Fatal(err)
	}
	copy(pg.Bytes()[off:off+50], bytes.Repeat([]byte{'f'}, 50))
	b.AddRxFrag(pg, off, 50)
	if err := b.Linearize(c); err != nil {
		t.Fatalf("Linearize of %d bytes behind %d of headroom with a 2200-byte class: %v", b.Len(), b.Headroom(), err)
	}
	if b.DataLen() != 0 || b.Len() != 1950 || !bytes.Equal(b.Data()[1900:], bytes.Repeat([]byte{'f'}, 50)) {
		t.Errorf("after Linearize: len %d, datalen %d, tail %q", b.Len(), b.DataLen(), b.Data()[1900:])
	}
}

// TestSetGSOZeroClears checks that a gso_size of 0 clears the segment count
// and type too, and that CopyHeader of a nil buffer panics naming it.
func TestSetGSOZeroClears(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(100)
	defer c.Free(b)
	b.SetGSO(1400, 5, skb.GSOUDPL4)
	b.SetGSO(0, 5, skb.GSOUDPL4)
	if b.IsGSO() || b.GSOSize() != 0 || b.GSOSegs() != 0 || b.GSOType() != 0 {
		t.Errorf("after SetGSO(0, 5, GSOUDPL4): size %d segs %d type %v; want all cleared", b.GSOSize(), b.GSOSegs(), b.GSOType())
	}
	mustPanic(t, func() { b.CopyHeader(nil) }, "copy header", "nil *Buff")
}

// TestCowHeadNonlinearLargestClass asks CowHead for more headroom on a
// 2500-byte nonlinear packet whose head a PskbMayPull moved into the
// largest class: the head cannot grow, and the packet must be copied into
// a block that fits it (linear), not refused with ErrTooBig.
func TestCowHeadNonlinearLargestClass(t *testing.T) {
	c := newCache(t, pool.Config{})
	b, _ := c.Alloc(1500)
	defer c.Free(b)
	want := bytes.Repeat([]byte("0123456789"), 250)
	copy(b.Put(1500), want)
	pg, off, err := c.AllocFrag(1000)
	if err != nil {
		t.Fatal(err)
	}
	copy(pg.Bytes()[off:off+1000], want[1500:])
	b.AddRxFrag(pg, off, 1000)
	if err := b.PskbMayPull(c, 2000); err != nil {
		t.Fatal(err)
	}
	b.SetNetworkHeader(0)
	if err := b.CowHead(c, 256); err != nil {
		t.Fatalf("CowHead(256) of %d bytes, head end %d: %v", b.Len(), b.End(), err)
	}
	got := make([]byte, b.Len())
	if err := b.CopyBits(0, got); err != nil || !bytes.Equal(got, want) || b.Headroom() < 256 || b.NetworkOffset() != 0 {
		t.Errorf("after CowHead: headroom %d, bytes equal %v (%v), network header at %d", b.Headroom(), bytes.Equal(got, want), err, b.NetworkOffset())
	}
}
