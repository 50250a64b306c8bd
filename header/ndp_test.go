package header

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// ndpMessage builds the Neighbor Discovery message f describes with Encode
// and its checksum over the pseudo-header of ip6a to ip6b.
func ndpMessage(f *NDPFields) []byte {
	m := make([]byte, f.Len())
	NDP(m).Encode(f)
	sum := PseudoHeaderChecksumIPv6(ip6a.As16(), ip6b.As16(), IPProtoICMPv6, uint32(len(m)))
	ICMPv6(m).SetChecksum(ICMPv6(m).ComputeChecksum(sum))
	return m
}

// gpNDP returns gopacket's layer for the message f describes, with opts.
func gpNDP(f *NDPFields, opts layers.ICMPv6Options) gopacket.SerializableLayer {
	switch f.Type {
	case ICMPv6RouterSolicit:
		return &layers.ICMPv6RouterSolicitation{Options: opts}
	case ICMPv6RouterAdvert:
		return &layers.ICMPv6RouterAdvertisement{HopLimit: f.CurHopLimit, Flags: f.RouterFlags, RouterLifetime: f.RouterLifetime,
			ReachableTime: f.ReachableTime, RetransTimer: f.RetransTimer, Options: opts}
	case ICMPv6NeighborSolicit:
		return &layers.ICMPv6NeighborSolicitation{TargetAddress: f.Target.AsSlice(), Options: opts}
	case ICMPv6NeighborAdvert:
		return &layers.ICMPv6NeighborAdvertisement{Flags: f.Flags, TargetAddress: f.Target.AsSlice(), Options: opts}
	default:
		return &layers.ICMPv6Redirect{TargetAddress: f.Target.AsSlice(), DestinationAddress: f.Destination.AsSlice(), Options: opts}
	}
}

// gpNDPRead returns the fields and options gopacket decodes from an IPv6
// packet holding a Neighbor Discovery message.
func gpNDPRead(t *testing.T, pkt []byte) (NDPFields, layers.ICMPv6Options) {
	t.Helper()
	p := gopacket.NewPacket(pkt, layers.LayerTypeIPv6, gopacket.Default)
	var f NDPFields
	addr := func(ip net.IP) netip.Addr { a, _ := netip.AddrFromSlice(ip); return a }
	for _, l := range p.Layers() {
		switch l := l.(type) {
		case *layers.ICMPv6RouterSolicitation:
			f.Type = ICMPv6RouterSolicit
			return f, l.Options
		case *layers.ICMPv6RouterAdvertisement:
			f = NDPFields{Type: ICMPv6RouterAdvert, CurHopLimit: l.HopLimit, RouterFlags: l.Flags, RouterLifetime: l.RouterLifetime,
				ReachableTime: l.ReachableTime, RetransTimer: l.RetransTimer}
			return f, l.Options
		case *layers.ICMPv6NeighborSolicitation:
			return NDPFields{Type: ICMPv6NeighborSolicit, Target: addr(l.TargetAddress)}, l.Options
		case *layers.ICMPv6NeighborAdvertisement:
			return NDPFields{Type: ICMPv6NeighborAdvert, Flags: l.Flags & 0xe0, Target: addr(l.TargetAddress)}, l.Options
		case *layers.ICMPv6Redirect:
			return NDPFields{Type: ICMPv6Redirect, Target: addr(l.TargetAddress), Destination: addr(l.DestinationAddress)}, l.Options
		}
	}
	t.Fatalf("gopacket decoded no neighbor discovery message: %v", p)
	return f, nil
}

// ndpRead reads the fields and options of m with this package's view and
// iterator.
func ndpRead(t *testing.T, m []byte) (NDPFields, layers.ICMPv6Options) {
	t.Helper()
	h, err := ParseNDP(m)
	if err != nil {
		t.Fatalf("ParseNDP(% x): %v", m, err)
	}
	f := NDPFields{Type: h.Type()}
	switch h.Type() {
	case ICMPv6RouterAdvert:
		f.CurHopLimit, f.RouterFlags, f.RouterLifetime, f.ReachableTime, f.RetransTimer =
			h.CurHopLimit(), h.RouterFlags(), h.RouterLifetime(), h.ReachableTime(), h.RetransTimer()
	case ICMPv6NeighborAdvert:
		f.Flags, f.Target = h.Flags(), h.Target()
	case ICMPv6NeighborSolicit:
		f.Target = h.Target()
	case ICMPv6Redirect:
		f.Target, f.Destination = h.Target(), h.Destination()
	}
	opts, err := ndpOptions(h.Options())
	if err != nil {
		t.Fatalf("options of % x: %v", m, err)
	}
	return f, opts
}

// ndpOptions walks b with an NDPOptionIterator and returns what it found
// and its Err.
func ndpOptions(b []byte) (layers.ICMPv6Options, error) {
	var opts layers.ICMPv6Options
	it := NewNDPOptionIterator(b)
	for {
		typ, data, ok := it.Next()
		if !ok {
			return opts, it.Err()
		}
		opts = append(opts, layers.ICMPv6Option{Type: layers.ICMPv6Opt(typ), Data: data})
	}
}

func sameNDP(a, b NDPFields, ao, bo layers.ICMPv6Options) bool {
	if a.Type != b.Type || a.Flags != b.Flags || a.Target != b.Target || a.Destination != b.Destination ||
		a.CurHopLimit != b.CurHopLimit || a.RouterFlags != b.RouterFlags || a.RouterLifetime != b.RouterLifetime ||
		a.ReachableTime != b.ReachableTime || a.RetransTimer != b.RetransTimer || len(ao) != len(bo) {
		return false
	}
	for i := range ao {
		if ao[i].Type != bo[i].Type || !bytes.Equal(ao[i].Data, bo[i].Data) {
			return false
		}
	}
	return true
}

// TestGopacketNDP builds every Neighbor Discovery message type with random
// fields and options, checks gopacket's decoding of it, and compares it
// byte for byte with gopacket's serialization (with one option: gopacket
// writes several in reverse order).
func TestGopacketNDP(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	types := []uint8{ICMPv6RouterSolicit, ICMPv6RouterAdvert, ICMPv6NeighborSolicit, ICMPv6NeighborAdvert, ICMPv6Redirect}
	for i := range 200 {
		f := NDPFields{Type: types[i%len(types)]}
		a := ip6b.As16()
		a[15] = byte(r.Uint32())
		switch f.Type {
		case ICMPv6RouterAdvert:
			f.CurHopLimit, f.RouterFlags = uint8(r.Uint32()), uint8(r.Uint32())
			f.RouterLifetime, f.ReachableTime, f.RetransTimer = uint16(r.Uint32()), r.Uint32(), r.Uint32()
		case ICMPv6NeighborAdvert:
			f.Flags = uint8(r.Uint32()) & 0xe0
			fallthrough
		case ICMPv6NeighborSolicit:
			f.Target = netip.AddrFrom16(a)
		case ICMPv6Redirect:
			f.Target = netip.AddrFrom16(a)
			a[14] = byte(r.Uint32())
			f.Destination = netip.AddrFrom16(a)
		}
		var gopts layers.ICMPv6Options
		for k := range r.IntN(4) {
			typ := uint8(1 + r.IntN(30))
			data := make([]byte, r.IntN(40))
			if k == 0 {
				typ, data = NDPOptionSourceLinkAddr, mac1[:]
			}
			for j := range data {
				if k > 0 {
					data[j] = byte(r.Uint32())
				}
			}
			before := len(f.Options)
			f.Options = AppendNDPOption(f.Options, typ, data)
			if n := len(f.Options) - before; n%8 != 0 || n < 2+len(data) || n >= 2+len(data)+8 {
				t.Fatalf("AppendNDPOption of %d bytes wrote %d", len(data), n)
			}
			gopts = append(gopts, layers.ICMPv6Option{Type: layers.ICMPv6Opt(typ), Data: f.Options[before+2:]})
		}
		m := ndpMessage(&f)
		if len(m) != NDPFixedLen(f.Type)+len(f.Options) {
			t.Fatalf("Len %d", len(m))
		}

		// Read here and by gopacket.
		got, opts := ndpRead(t, m)
		if !sameNDP(got, f, opts, gopts) {
			t.Fatalf("read back %+v %v, built %+v %v", got, opts, f, gopts)
		}
		ip := make([]byte, IPv6HeaderLen)
		IPv6(ip).Encode(&IPv6Fields{PayloadLen: uint16(len(m)), NextHeader: IPProtoICMPv6, HopLimit: NDPHopLimit, Source: ip6a, Destination: ip6b})
		gf, gopt := gpNDPRead(t, append(ip, m...))
		if !sameNDP(gf, f, gopt, gopts) {
			t.Fatalf("gopacket reads %+v %v from % x; built %+v %v", gf, gopt, m, f, gopts)
		}
		if opts := NDP(m).Options(); len(gopts) > 0 {
			if mac, ok := NDPLinkAddr(opts[2:8]); !ok || mac != mac1 {
				t.Fatalf("NDPLinkAddr: %v %v", mac, ok)
			}
		}

		// gopacket's serialization, checksum included, is the same.
		if len(gopts) > 1 {
			continue
		}
		gip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: NDPHopLimit, SrcIP: ip6a.AsSlice(), DstIP: ip6b.AsSlice()}
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(f.Type, 0)}
		if err := icmp.SetNetworkLayerForChecksum(gip); err != nil {
			t.Fatal(err)
		}
		b := gpSerialize(t, gip, icmp, gpNDP(&f, gopts))
		if !bytes.Equal(b[IPv6HeaderLen:], m) {
			t.Fatalf("type %d: gopacket serializes\n% x\nhere\n% x", f.Type, b[IPv6HeaderLen:], m)
		}
	}
}

// TestNDPErrors checks ParseNDP's refusals, the option iterator's, and the
// panics of Encode and AppendNDPOption.
func TestNDPErrors(t *testing.T) {
	for _, c := range []struct {
		b   []byte
		err error
	}{
		{nil, ErrTruncated},
		{[]byte{ICMPv6EchoRequest, 0, 0, 0, 0, 0, 0, 0}, ErrBadType},
		{[]byte{ICMPv6RouterSolicit, 0, 0, 0, 0, 0, 0}, ErrTruncated},
		{make([]byte, 15), ErrBadType},
		{append([]byte{ICMPv6RouterAdvert}, make([]byte, 14)...), ErrTruncated},
		{append([]byte{ICMPv6NeighborSolicit}, make([]byte, 22)...), ErrTruncated},
		{append([]byte{ICMPv6Redirect}, make([]byte, 38)...), ErrTruncated},
	} {
		var pe *ParseError
		if _, err := ParseNDP(c.b); !errors.Is(err, c.err) || !errors.As(err, &pe) || pe.Layer != "ndp" {
			t.Errorf("ParseNDP(% x): %v, want %v", c.b, err, c.err)
		}
	}
	for _, c := range []struct {
		name string
		b    []byte
		n    int
	}{
		{"zero length", []byte{1, 0, 0, 0, 0, 0, 0, 0}, 0},
		{"past end", []byte{1, 2, 0, 0, 0, 0, 0, 0}, 0},
		{"lone byte", []byte{1, 1, 0, 0, 0, 0, 0, 0, 3}, 1},
		{"second zero", []byte{1, 1, 0, 0, 0, 0, 0, 0, 3, 0}, 1},
	} {
		it := NewNDPOptionIterator(c.b)
		n := 0
		for {
			if _, _, ok := it.Next(); !ok {
				break
			}
			n++
		}
		if n != c.n || !errors.Is(it.Err(), ErrBadOption) {
			t.Errorf("%s: %d options, %v; want %d and ErrBadOption", c.name, n, it.Err(), c.n)
		}
	}
	var zero NDPOptionIterator
	if _, _, ok := zero.Next(); ok || zero.Err() != nil {
		t.Error("the zero iterator is not empty")
	}
	for _, n := range []int{5, 14} {
		if _, ok := NDPLinkAddr(make([]byte, n)); ok {
			t.Errorf("NDPLinkAddr of %d bytes: want false, as the kernel drops an option of another length than Ethernet's", n)
		}
	}
	// Field methods on a message of another type, too short for the field,
	// return zero values; SetTarget panics naming the length.
	rs, err := ParseNDP([]byte{ICMPv6RouterSolicit, 0, 0, 0, 0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Target().IsValid() || rs.Destination().IsValid() || rs.ReachableTime() != 0 || rs.RetransTimer() != 0 || len(rs.Options()) != 0 {
		t.Errorf("field methods of a Router Solicitation read past it")
	}
	if ra := NDP(ndpMessage(&NDPFields{Type: ICMPv6RouterAdvert, RetransTimer: 7})); ra.Target().IsValid() || ra.RetransTimer() != 7 {
		t.Errorf("Target of a Router Advertisement: %v", ra.Target())
	}
	wantPanic(t, "SetTarget short", "on a message of 8 bytes", func() { rs.SetTarget(ip6a) })

	buf := make([]byte, 64)
	wantPanic(t, "type", "type 128", func() { NDP(buf).Encode(&NDPFields{Type: ICMPv6EchoRequest}) })
	wantPanic(t, "short", "into 23 bytes", func() {
		NDP(buf[:23]).Encode(&NDPFields{Type: ICMPv6NeighborSolicit, Target: ip6a})
	})
	wantPanic(t, "options", "with 8 bytes of options into 24", func() {
		NDP(buf[:24]).Encode(&NDPFields{Type: ICMPv6NeighborSolicit, Target: ip6a, Options: make([]byte, 8)})
	})
	wantPanic(t, "target", "Target is the zero netip.Addr", func() { NDP(buf).Encode(&NDPFields{Type: ICMPv6NeighborAdvert}) })
	wantPanic(t, "destination", "Destination is an IPv4 address", func() {
		NDP(buf).Encode(&NDPFields{Type: ICMPv6Redirect, Target: ip6a, Destination: ip4a})
	})
	wantPanic(t, "SetTarget", "target is an IPv4 address", func() { NDP(buf).SetTarget(ip4a) })
	wantPanic(t, "option", "2039 bytes", func() { AppendNDPOption(nil, 1, make([]byte, 2039)) })
	if n := len(AppendNDPOption(nil, 1, make([]byte, 2038))); n != 2040 {
		t.Fatalf("longest option: %d bytes", n)
	}
	// Setters keep the reserved bits and the type.
	m := ndpMessage(&NDPFields{Type: ICMPv6NeighborAdvert, Target: ip6a})
	m[4] = 0x1f
	h := NDP(m)
	h.SetFlags(NDPFlagSolicited | NDPFlagOverride | 0x01)
	h.SetTarget(ip6b)
	if h.Flags() != NDPFlagSolicited|NDPFlagOverride || m[4]&0x1f != 0x1f || h.Target() != ip6b || h.Type() != ICMPv6NeighborAdvert || h.Code() != 0 {
		t.Fatalf("setters wrote % x", m)
	}
}

// FuzzNDP parses arbitrary bytes as a Neighbor Discovery message and walks
// its options: no panic, and the options this package accepts the ones
// gopacket reads.
func FuzzNDP(f *testing.F) {
	f.Add(ndpMessage(&NDPFields{Type: ICMPv6NeighborSolicit, Target: ip6a, Options: AppendNDPOption(nil, NDPOptionSourceLinkAddr, mac1[:])}))
	f.Add(ndpMessage(&NDPFields{Type: ICMPv6RouterAdvert, CurHopLimit: 64, Options: AppendNDPOption(nil, NDPOptionMTU, []byte{0, 0, 0, 0, 5, 220})}))
	f.Add([]byte{ICMPv6Redirect})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseNDP(b)
		if err != nil {
			if len(b) > 0 && NDPFixedLen(b[0]) > 0 && len(b) >= NDPFixedLen(b[0]) {
				t.Fatalf("refused % x: %v", b, err)
			}
			return
		}
		// Every field method is safe on every parsed message.
		_ = h.Flags() + h.RouterFlags() + h.CurHopLimit()
		_, _ = h.Target(), h.Destination()
		_ = h.ReachableTime() + h.RetransTimer() + uint32(h.RouterLifetime())
		opts, err := ndpOptions(h.Options())
		if err != nil {
			return
		}
		ip := make([]byte, IPv6HeaderLen)
		IPv6(ip).Encode(&IPv6Fields{PayloadLen: uint16(len(b)), NextHeader: IPProtoICMPv6, HopLimit: NDPHopLimit, Source: ip6a, Destination: ip6b})
		if h.Type() == ICMPv6RouterSolicit && len(b) < 8 {
			return
		}
		gf, gopts := gpNDPRead(t, append(ip, b...))
		here, _ := ndpRead(t, b)
		if !sameNDP(gf, here, gopts, opts) {
			t.Fatalf("gopacket reads %+v %v, here %+v %v, from % x", gf, gopts, here, opts, b)
		}
	})
}
