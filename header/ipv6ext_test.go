package header

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// gpOption is an option as gopacket decodes it, padding left out.
type gpOption struct {
	typ  uint8
	data string
}

// gpExtOptions decodes b as a Hop-by-Hop (hbh) or Destination Options
// header with gopacket and returns its Next Header, length and the options
// that are not padding.
func gpExtOptions(t *testing.T, b []byte, hbh bool) (next uint8, n int, opts []gpOption) {
	t.Helper()
	lt := layers.LayerTypeIPv6Destination
	if hbh {
		lt = layers.LayerTypeIPv6HopByHop
	}
	p := gopacket.NewPacket(b, lt, gopacket.Default)
	add := func(typ uint8, data []byte) {
		if typ != IPv6OptionPad1 && typ != IPv6OptionPadN {
			opts = append(opts, gpOption{typ, string(data)})
		}
	}
	switch l := p.Layer(lt).(type) {
	case *layers.IPv6HopByHop:
		for _, o := range l.Options {
			add(o.OptionType, o.OptionData)
		}
		return uint8(l.NextHeader), l.ActualLength, opts
	case *layers.IPv6Destination:
		for _, o := range l.Options {
			add(o.OptionType, o.OptionData)
		}
		return uint8(l.NextHeader), l.ActualLength, opts
	}
	t.Fatalf("gopacket decoded no options header from % x: %v", b, p.ErrorLayer())
	return 0, 0, nil
}

// randOptions returns 0 to 5 options, with Pad1 and short PadN between
// some of them, and the options that are not padding.
func randOptions(r *rand.Rand) (b []byte, want []gpOption) {
	for range r.IntN(6) {
		switch r.IntN(4) {
		case 0:
			b = AppendIPv6Option(b, IPv6OptionPad1, nil)
		case 1:
			b = AppendIPv6Option(b, IPv6OptionPadN, make([]byte, r.IntN(4)))
		}
		typ := uint8(2 + r.IntN(250))
		data := make([]byte, r.IntN(40))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		b = AppendIPv6Option(b, typ, data)
		want = append(want, gpOption{typ, string(data)})
	}
	return b, want
}

// TestGopacketIPv6Options builds Hop-by-Hop and Destination Options headers
// with Encode and checks what gopacket decodes from them, and reads with
// ParseIPv6Options and the iterator the headers gopacket serializes.
func TestGopacketIPv6Options(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for i := range 300 {
		opts, want := randOptions(r)
		f := IPv6OptionsFields{NextHeader: uint8(r.IntN(256)), Options: opts}
		n := f.HeaderLen()
		b := bytes.Repeat([]byte{0xee}, n+8)
		IPv6Options(b).Encode(&f)
		if n%8 != 0 || n < 2+len(opts) || n >= 2+len(opts)+8 {
			t.Fatalf("HeaderLen %d for %d bytes of options", n, len(opts))
		}
		if !bytes.Equal(b[n:], bytes.Repeat([]byte{0xee}, 8)) {
			t.Fatalf("Encode wrote past its %d bytes: % x", n, b)
		}
		h, err := ParseIPv6Options(b)
		if err != nil || len(h) != n || h.HeaderLen() != n || h.NextHeader() != f.NextHeader || !bytes.Equal(h.Options()[:len(opts)], opts) {
			t.Fatalf("ParseIPv6Options(% x) = % x, %v", b, h, err)
		}
		got, itErr := ipv6Options(h.Options())
		if itErr != nil || !equalOptions(got, want) {
			t.Fatalf("iterator read %v (%v) from % x, want %v", got, itErr, h, want)
		}
		// gopacket decodes with the header's successor present: its
		// option decoder wants 2 bytes even for a final Pad1.
		gnext, glen, gopts := gpExtOptions(t, b, i%2 == 0)
		if gnext != f.NextHeader || glen != n || !equalOptions(gopts, want) {
			t.Fatalf("gopacket reads next %d, %d bytes, %v from % x; want %d, %d, %v", gnext, glen, gopts, b[:n], f.NextHeader, n, want)
		}
	}

	// gopacket's serializer pads each option to its alignment; the header
	// must come out a multiple of 8 bytes, which the last option's length
	// is chosen for. This package's iterator reads it back.
	for _, hbh := range []bool{true, false} {
		o1 := []byte{0, 0}          // router alert value 0, 2n+0
		o2 := []byte{0, 0, 0, 0x05} // 4n+2
		var b []byte
		var o3 []byte
		for k := range 8 {
			o3 = []byte("abcdefghijklm")[:6+k] // no alignment
			opts := []*layers.IPv6HopByHopOption{
				{OptionType: IPv6OptionRouterAlert, OptionData: o1, OptionAlignment: [2]uint8{2, 0}},
				{OptionType: 0x3e, OptionData: o2, OptionAlignment: [2]uint8{4, 2}},
				{OptionType: 0x1e, OptionData: o3},
			}
			var l gopacket.SerializableLayer
			if hbh {
				h := &layers.IPv6HopByHop{Options: opts}
				h.NextHeader = layers.IPProtocolNoNextHeader
				l = h
			} else {
				h := &layers.IPv6Destination{}
				h.NextHeader = layers.IPProtocolNoNextHeader
				for _, o := range opts {
					h.Options = append(h.Options, (*layers.IPv6DestinationOption)(o))
				}
				l = h
			}
			buf := gopacket.NewSerializeBuffer()
			if gopacket.SerializeLayers(buf, gpOpts, l) == nil {
				b = buf.Bytes()
				break
			}
		}
		if b == nil {
			t.Fatal("gopacket serialized no options header")
		}
		h, err := ParseIPv6Options(b)
		if err != nil || len(h) != len(b) || h.NextHeader() != IPProtoNoNext {
			t.Fatalf("ParseIPv6Options(% x): % x, %v", b, h, err)
		}
		got, itErr := ipv6Options(h.Options())
		want := []gpOption{{IPv6OptionRouterAlert, string(o1)}, {0x3e, string(o2)}, {0x1e, string(o3)}}
		if itErr != nil || !equalOptions(got, want) {
			t.Fatalf("hbh %v: iterator read %v (%v) from gopacket's % x", hbh, got, itErr, b)
		}
	}
}

// ipv6Options walks b with an IPv6OptionIterator and returns what it
// found and its Err.
func ipv6Options(b []byte) ([]gpOption, error) {
	var got []gpOption
	it := NewIPv6OptionIterator(b)
	for {
		typ, data, ok := it.Next()
		if !ok {
			return got, it.Err()
		}
		got = append(got, gpOption{typ, string(data)})
	}
}

// wantPanic fails t unless f panics with a string holding want.
func wantPanic(t *testing.T, name, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Errorf("%s: panic %v, want one naming %q", name, r, want)
		}
	}()
	f()
}

func equalOptions(a, b []gpOption) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIPv6OptionIteratorMalformed feeds the iterator the options that the
// kernel's ip6_parse_tlv drops a packet for, and the padding it accepts.
func TestIPv6OptionIteratorMalformed(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		n    int // options before the end
		bad  bool
	}{
		{"empty", nil, 0, false},
		{"pad1 x6", []byte{0, 0, 0, 0, 0, 0}, 0, false},
		{"padn 7", []byte{1, 5, 0, 0, 0, 0, 0}, 0, false},
		{"pad1 padn 7", []byte{0, 1, 4, 0, 0, 0, 0}, 0, false},
		{"pad 7 option pad 6", []byte{1, 5, 0, 0, 0, 0, 0, 5, 2, 0, 0, 1, 4, 0, 0, 0, 0}, 1, false},
		{"pad1 x8", []byte{0, 0, 0, 0, 0, 0, 0, 0}, 0, true},
		{"padn 8", []byte{1, 6, 0, 0, 0, 0, 0, 0}, 0, true},
		{"pad1 padn 8", []byte{0, 1, 5, 0, 0, 0, 0, 0}, 0, true},
		{"padn data", []byte{1, 2, 0, 1}, 0, true},
		{"option past end", []byte{5, 2, 0}, 0, true},
		{"lone type", []byte{5, 2, 0, 0, 7}, 1, true},
		{"padn past end", []byte{1, 4, 0, 0}, 0, true},
	} {
		it := NewIPv6OptionIterator(c.b)
		n := 0
		for {
			if _, _, ok := it.Next(); !ok {
				break
			}
			n++
		}
		if n != c.n || (it.Err() != nil) != c.bad || c.bad && !errors.Is(it.Err(), ErrBadOption) {
			t.Errorf("%s: %d options, Err %v; want %d, bad %v", c.name, n, it.Err(), c.n, c.bad)
		}
		if _, _, ok := it.Next(); ok {
			t.Errorf("%s: Next after the end found an option", c.name)
		}
	}
	var zero IPv6OptionIterator
	if _, _, ok := zero.Next(); ok || zero.Err() != nil {
		t.Error("the zero iterator is not empty")
	}
}

// TestGopacketIPv6Routing builds type 0 Routing headers (the type gopacket
// decodes addresses of) with Encode and checks gopacket's reading, and
// checks the views and setters.
func TestGopacketIPv6Routing(t *testing.T) {
	for naddr := range 4 {
		data := make([]byte, 4+16*naddr)
		for i := range naddr {
			a := ip6b.As16()
			a[15] = byte(i + 1)
			copy(data[4+16*i:], a[:])
		}
		f := IPv6RoutingFields{NextHeader: IPProtoUDP, RoutingType: IPv6RoutingType0, SegmentsLeft: uint8(naddr), Data: data}
		n := f.HeaderLen()
		b := bytes.Repeat([]byte{0xee}, n+8)
		IPv6Routing(b).Encode(&f)
		h, err := ParseIPv6Routing(b)
		if err != nil || len(h) != n || n != 8+16*naddr || h.RoutingType() != IPv6RoutingType0 || h.SegmentsLeft() != uint8(naddr) ||
			h.NextHeader() != IPProtoUDP || h.Addresses() != naddr || !bytes.Equal(h.Data(), data) {
			t.Fatalf("%d addresses: ParseIPv6Routing(% x) = % x, %v", naddr, b, h, err)
		}
		p := gopacket.NewPacket(b[:n], layers.LayerTypeIPv6Routing, gopacket.Default)
		l, ok := p.Layer(layers.LayerTypeIPv6Routing).(*layers.IPv6Routing)
		if !ok {
			t.Fatalf("gopacket decoded no routing header from % x: %v", b[:n], p.ErrorLayer())
		}
		if uint8(l.NextHeader) != IPProtoUDP || l.ActualLength != n || l.RoutingType != 0 || l.SegmentsLeft != uint8(naddr) || len(l.SourceRoutingIPs) != naddr {
			t.Fatalf("gopacket reads %+v", l)
		}
		for i, a := range l.SourceRoutingIPs {
			if !a.Equal(net.IP(h.Data()[4+16*i : 20+16*i])) {
				t.Fatalf("address %d: gopacket %v, here % x", i, a, h.Data()[4+16*i:20+16*i])
			}
		}
		h.SetSegmentsLeft(0)
		h.SetNextHeader(IPProtoTCP)
		if h.SegmentsLeft() != 0 || h.NextHeader() != IPProtoTCP || h.RoutingType() != IPv6RoutingType0 {
			t.Fatalf("setters: % x", h)
		}
	}
	// Type-specific data is padded with zeros to a multiple of 8.
	b := bytes.Repeat([]byte{0xee}, 16)
	f := IPv6RoutingFields{NextHeader: IPProtoNoNext, RoutingType: IPv6RoutingSegments, SegmentsLeft: 1, Data: []byte{1, 2, 3, 4, 5}}
	IPv6Routing(b).Encode(&f)
	if want := []byte{IPProtoNoNext, 1, 4, 1, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0}; !bytes.Equal(b, want) {
		t.Fatalf("Encode wrote % x, want % x", b, want)
	}
	if h := IPv6Routing(b); h.Addresses() != 0 {
		t.Fatalf("a segment routing header has %d type 0/2 addresses", h.Addresses())
	}
}

// TestIPv6ExtParseShort checks the length checks of both parsers.
func TestIPv6ExtParseShort(t *testing.T) {
	for _, b := range [][]byte{nil, {0}, {0, 0, 0, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, err := ParseIPv6Options(b); !errors.Is(err, ErrTruncated) {
			t.Errorf("ParseIPv6Options(% x): %v, want ErrTruncated", b, err)
		}
		if _, err := ParseIPv6Routing(b); !errors.Is(err, ErrTruncated) {
			t.Errorf("ParseIPv6Routing(% x): %v, want ErrTruncated", b, err)
		}
	}
	var pe *ParseError
	if _, err := ParseIPv6Routing([]byte{0}); !errors.As(err, &pe) || pe.Layer != "ipv6 routing" {
		t.Errorf("ParseIPv6Routing error %v, want layer ipv6 routing", err)
	}
}

// TestIPv6ExtEncodePanics checks that Encode refuses a header longer than
// 2048 bytes or than its buffer, with the lengths in the message.
func TestIPv6ExtEncodePanics(t *testing.T) {
	big := make([]byte, 4096)
	wantPanic(t, "options too long", "2047 bytes of options (a 2056-byte header, at most 2048)", func() {
		IPv6Options(big).Encode(&IPv6OptionsFields{Options: make([]byte, 2047)})
	})
	wantPanic(t, "options short buffer", "into 7 bytes", func() {
		IPv6Options(big[:7]).Encode(&IPv6OptionsFields{})
	})
	wantPanic(t, "routing too long", "2045 bytes of data", func() {
		IPv6Routing(big).Encode(&IPv6RoutingFields{Data: make([]byte, 2045)})
	})
	wantPanic(t, "routing short buffer", "into 15 bytes", func() {
		IPv6Routing(big[:15]).Encode(&IPv6RoutingFields{Data: make([]byte, 5)})
	})
	wantPanic(t, "option data", "256 bytes of data", func() {
		AppendIPv6Option(nil, 5, make([]byte, 256))
	})
	// The longest header fits.
	IPv6Options(big).Encode(&IPv6OptionsFields{Options: make([]byte, 2046)})
	IPv6Routing(big).Encode(&IPv6RoutingFields{Data: make([]byte, 2044)})
	if h, err := ParseIPv6Routing(big); err != nil || h.HeaderLen() != IPv6ExtMaxLen {
		t.Fatalf("longest routing header: %d bytes, %v", len(h), err)
	}
}

// TestIPv6OptionActions checks the bits of the option types RFC 8200 and
// its companions define.
func TestIPv6OptionActions(t *testing.T) {
	for _, c := range []struct {
		typ    uint8
		action uint8
		change bool
	}{
		{IPv6OptionPad1, IPv6OptionSkip, false},
		{IPv6OptionRouterAlert, IPv6OptionSkip, false},
		{IPv6OptionJumbo, IPv6OptionDiscardUnicast, false},
		{IPv6OptionHomeAddress, IPv6OptionDiscardUnicast, false},
		{0x63, IPv6OptionDiscard, true},
		{0x8b, IPv6OptionDiscardICMP, false},
	} {
		if a, ch := IPv6OptionUnknownAction(c.typ), IPv6OptionMayChange(c.typ); a != c.action || ch != c.change {
			t.Errorf("type %#x: action %d, may change %v; want %d, %v", c.typ, a, ch, c.action, c.change)
		}
	}
}

// FuzzIPv6Options parses arbitrary bytes as an options header and walks its
// options: no panic, the view within the input, and the options that the
// iterator accepts the ones gopacket reads.
func FuzzIPv6Options(f *testing.F) {
	f.Add([]byte{IPProtoUDP, 0, 5, 2, 0, 0, 1, 0})
	f.Add([]byte{IPProtoUDP, 1, 0xc2, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{IPProtoUDP, 0, 1, 5, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseIPv6Options(b)
		if err != nil {
			if len(b) >= 2 && len(b) >= (int(b[1])+1)*8 {
				t.Fatalf("refused % x: %v", b, err)
			}
			return
		}
		if len(h) != h.HeaderLen() || &h[0] != &b[0] {
			t.Fatalf("view % x of % x", h, b)
		}
		got, itErr := ipv6Options(h.Options())
		for _, o := range got {
			if o.typ == IPv6OptionPad1 || o.typ == IPv6OptionPadN {
				t.Fatalf("iterator returned padding %d", o.typ)
			}
		}
		if itErr != nil {
			return
		}
		// gopacket wants 2 bytes for a final Pad1: give it a successor.
		_, glen, gopts := gpExtOptions(t, append(bytes.Clone(h), 0, 0), true)
		if glen != len(h) || !equalOptions(gopts, got) {
			t.Fatalf("gopacket reads %v, here %v, from % x", gopts, got, h)
		}
		r, err := ParseIPv6Routing(b)
		if err != nil || len(r) != len(h) || r.NextHeader() != h.NextHeader() {
			t.Fatalf("ParseIPv6Routing of the same bytes: % x, %v", r, err)
		}
	})
}
