package header

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

var (
	mac1 = MAC{0x02, 0, 0, 0, 0, 1}
	mac2 = MAC{0x02, 0, 0, 0, 0, 2}
	ip4a = netip.MustParseAddr("198.18.0.1")
	ip4b = netip.MustParseAddr("198.18.0.2")
	ip6a = netip.MustParseAddr("2001:db8::1")
	ip6b = netip.MustParseAddr("2001:db8::2")
)

// wantParseErr checks that err wraps want and, when it is a *ParseError,
// names layer.
func wantParseErr(t *testing.T, err, want error, layer string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v is not a *ParseError", err)
	}
	if pe.Layer != layer {
		t.Fatalf("layer = %q, want %q", pe.Layer, layer)
	}
	if pe.Error() == "" {
		t.Fatal("empty message")
	}
}

func TestEthernet(t *testing.T) {
	b := make([]byte, 20)
	Ethernet(b).Encode(&EthernetFields{Destination: mac1, Source: mac2, EtherType: EtherTypeIPv6})
	h, err := ParseEthernet(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Destination() != mac1 || h.Source() != mac2 || h.EtherType() != EtherTypeIPv6 || len(h.Payload()) != 6 {
		t.Fatalf("read back %v %v %#x %d", h.Destination(), h.Source(), h.EtherType(), len(h.Payload()))
	}
	want := []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd}
	if !bytes.Equal(b[:14], want) {
		t.Fatalf("encoded % x, want % x", b[:14], want)
	}
	h.SetDestination(BroadcastMAC)
	h.SetSource(mac1)
	h.SetEtherType(EtherTypeARP)
	if h.Destination() != BroadcastMAC || !h.Destination().IsMulticast() || h.Source() != mac1 || h.Source().IsMulticast() || h.EtherType() != EtherTypeARP {
		t.Fatal("setters")
	}
	if s := mac1.String(); s != "02:00:00:00:00:01" {
		t.Fatalf("String = %q", s)
	}
	if m, ok := MACFrom([]byte{2, 0, 0, 0, 0, 2}); !ok || m != mac2 {
		t.Fatal("MACFrom")
	}
	if _, ok := MACFrom([]byte{1, 2}); ok {
		t.Fatal("MACFrom accepted 2 bytes")
	}
	for _, n := range []int{0, 1, 13} {
		_, err := ParseEthernet(make([]byte, n))
		wantParseErr(t, err, ErrTruncated, "ethernet")
	}
	if _, err := ParseEthernet(make([]byte, 14)); err != nil {
		t.Fatal(err)
	}
}

func TestVLAN(t *testing.T) {
	tests := []struct {
		f   VLANFields
		tci uint16
	}{
		{VLANFields{Priority: 0, ID: 1, EtherType: EtherTypeIPv4}, 0x0001},
		{VLANFields{Priority: 7, DropEligible: true, ID: 0xfff, EtherType: EtherTypeIPv6}, 0xffff},
		{VLANFields{Priority: 5, ID: 100, EtherType: EtherTypeVLAN}, 0xa064},
		{VLANFields{Priority: 0xff, ID: 0xffff}, 0xefff}, // extra bits dropped
	}
	for _, tt := range tests {
		b := make([]byte, 4)
		VLAN(b).Encode(&tt.f)
		h, err := ParseVLAN(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.TCI() != tt.tci || h.Priority() != tt.f.Priority&7 || h.DropEligible() != tt.f.DropEligible ||
			h.ID() != tt.f.ID&0xfff || h.EtherType() != tt.f.EtherType || len(h.Payload()) != 0 {
			t.Errorf("%+v: TCI %#x PCP %d DEI %v ID %d type %#x", tt.f, h.TCI(), h.Priority(), h.DropEligible(), h.ID(), h.EtherType())
		}
		h.SetTCI(0x2005)
		h.SetEtherType(EtherTypeARP)
		if h.Priority() != 1 || h.ID() != 5 || h.EtherType() != EtherTypeARP {
			t.Error("setters")
		}
		h.SetPriority(6)
		h.SetDropEligible(true)
		h.SetID(0xabc)
		if h.Priority() != 6 || !h.DropEligible() || h.ID() != 0xabc || h.TCI() != 0xdabc {
			t.Errorf("field setters: TCI %#x", h.TCI())
		}
		h.SetDropEligible(false)
		h.SetPriority(0xff)
		h.SetID(0xffff)
		if h.TCI() != 0xefff {
			t.Errorf("field setters masking: TCI %#x", h.TCI())
		}
	}
	_, err := ParseVLAN(make([]byte, 3))
	wantParseErr(t, err, ErrTruncated, "vlan")
}

func TestARP(t *testing.T) {
	f := ARPFields{
		HardwareType: ARPHardwareEthernet, ProtocolType: EtherTypeIPv4, Op: ARPRequest,
		SenderHardwareAddr: mac1[:], SenderProtocolAddr: []byte{198, 18, 0, 1},
		TargetHardwareAddr: make([]byte, 6), TargetProtocolAddr: []byte{198, 18, 0, 2},
	}
	if f.Len() != ARPIPv4Len {
		t.Fatalf("Len = %d", f.Len())
	}
	b := make([]byte, 46) // with Ethernet padding after it
	ARP(b).Encode(&f)
	h, err := ParseARP(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != ARPIPv4Len || !h.IsEthernetIPv4() || h.Op() != ARPRequest || h.HardwareLen() != 6 || h.ProtocolLen() != 4 ||
		!bytes.Equal(h.SenderHardwareAddr(), mac1[:]) || !bytes.Equal(h.SenderProtocolAddr(), []byte{198, 18, 0, 1}) ||
		!bytes.Equal(h.TargetHardwareAddr(), make([]byte, 6)) || !bytes.Equal(h.TargetProtocolAddr(), []byte{198, 18, 0, 2}) {
		t.Fatalf("read back % x", []byte(h))
	}
	h.SetSenderHardwareAddr(mac2[:])
	h.SetSenderProtocolAddr([]byte{10, 0, 0, 1})
	h.SetTargetHardwareAddr(BroadcastMAC[:])
	h.SetTargetProtocolAddr([]byte{10, 0, 0, 2})
	if !bytes.Equal(h.SenderHardwareAddr(), mac2[:]) || !bytes.Equal(h.SenderProtocolAddr(), []byte{10, 0, 0, 1}) ||
		!bytes.Equal(h.TargetHardwareAddr(), BroadcastMAC[:]) || !bytes.Equal(h.TargetProtocolAddr(), []byte{10, 0, 0, 2}) {
		t.Fatal("address setters")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic for a 4-byte hardware address")
			}
		}()
		h.SetSenderHardwareAddr([]byte{1, 2, 3, 4})
	}()
	h.SetOp(ARPReply)
	h.SetHardwareType(6)
	h.SetProtocolType(EtherTypeIPv6)
	if h.Op() != ARPReply || h.HardwareType() != 6 || h.ProtocolType() != EtherTypeIPv6 || h.IsEthernetIPv4() {
		t.Fatal("setters")
	}

	// Generic lengths: 8-byte hardware, 16-byte protocol addresses.
	g := ARPFields{Op: 1, SenderHardwareAddr: make([]byte, 8), TargetHardwareAddr: bytes.Repeat([]byte{1}, 8),
		SenderProtocolAddr: make([]byte, 16), TargetProtocolAddr: bytes.Repeat([]byte{2}, 16)}
	gb := make([]byte, g.Len())
	ARP(gb).Encode(&g)
	gh, err := ParseARP(gb)
	if err != nil || !bytes.Equal(gh.TargetProtocolAddr(), g.TargetProtocolAddr) || !bytes.Equal(gh.TargetHardwareAddr(), g.TargetHardwareAddr) {
		t.Fatalf("generic ARP: %v", err)
	}

	errs := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"7 bytes", make([]byte, 7)},
		{"27 bytes of IPv4 ARP", b[:27]},
		{"lengths 255", append([]byte{0, 1, 8, 0, 255, 255, 0, 1}, make([]byte, 1000)...)},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseARP(tt.b)
			wantParseErr(t, err, ErrTruncated, "arp")
		})
	}
}

func TestARPEncodePanicsOnMismatchedLengths(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	ARP(make([]byte, 64)).Encode(&ARPFields{SenderHardwareAddr: make([]byte, 6), TargetHardwareAddr: make([]byte, 4)})
}

func TestIPv4(t *testing.T) {
	opts := []byte{0x94, 0x04, 0, 0, 1} // router alert (RFC 2113), NOP; padded to 8
	f := IPv4Fields{
		TOS: 0xb8, TotalLen: 28 + 8, ID: 0x1234, Flags: IPv4FlagDontFragment, FragmentOffset: 0,
		TTL: 64, Protocol: IPProtoUDP, Source: ip4a, Destination: ip4b, Options: opts,
	}
	if f.HeaderLen() != 28 {
		t.Fatalf("HeaderLen = %d", f.HeaderLen())
	}
	b := make([]byte, 60)
	for i := range b {
		b[i] = 0xee // garbage Encode must overwrite (padding included)
	}
	IPv4(b).Encode(&f)
	h, err := ParseIPv4(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 36 || h.Version() != 4 || h.HeaderLen() != 28 || h.TOS() != 0xb8 || h.TotalLen() != 36 ||
		h.ID() != 0x1234 || h.Flags() != IPv4FlagDontFragment || h.FragmentOffset() != 0 || h.IsFragment() ||
		h.TTL() != 64 || h.Protocol() != IPProtoUDP || h.Source() != ip4a || h.Destination() != ip4b ||
		!bytes.Equal(h.Options(), []byte{0x94, 0x04, 0, 0, 1, 0, 0, 0}) || len(h.Payload()) != 8 {
		t.Fatalf("read back % x", []byte(h))
	}
	if !h.ChecksumValid() || h.ComputeChecksum() != h.Checksum() {
		t.Fatalf("checksum %#x, computed %#x", h.Checksum(), h.ComputeChecksum())
	}

	// Setters.
	h.SetHeaderLen(24)
	h.SetTOS(1)
	h.SetTotalLen(30)
	h.SetID(7)
	h.SetFlagsFragmentOffset(IPv4FlagMoreFragments, 1480)
	h.SetTTL(3)
	h.SetProtocol(IPProtoTCP)
	h.SetSource(ip4b)
	h.SetDestination(netip.MustParseAddr("::ffff:10.0.0.1"))
	h.SetChecksum(h.ComputeChecksum())
	if h.HeaderLen() != 24 || h.TOS() != 1 || h.TotalLen() != 30 || h.ID() != 7 || h.Flags() != IPv4FlagMoreFragments ||
		h.FragmentOffset() != 1480 || !h.IsFragment() || h.TTL() != 3 || h.Protocol() != IPProtoTCP ||
		h.Source() != ip4b || h.Destination() != netip.MustParseAddr("10.0.0.1") || !h.ChecksumValid() {
		t.Fatalf("setters: % x", []byte(h))
	}
	h.SetFlagsFragmentOffset(0, 8)
	if !h.IsFragment() || h.Flags() != 0 {
		t.Fatal("offset-only fragment")
	}
	// Encode without options clears to 20 bytes.
	IPv4(b).Encode(&IPv4Fields{TotalLen: 20, Source: ip4a, Destination: ip4b})
	if IPv4(b).HeaderLen() != 20 || !IPv4(b).ChecksumValid() {
		t.Fatal("no options")
	}
}

func TestIPv4DecTTL(t *testing.T) {
	b := make([]byte, 20)
	for ttl := 1; ttl < 256; ttl++ {
		for _, id := range []uint16{0, 0x1234, 0xffff} {
			IPv4(b).Encode(&IPv4Fields{TotalLen: 20, ID: id, TTL: uint8(ttl), Protocol: IPProtoUDP, Source: ip4a, Destination: ip4b})
			h := IPv4(b)
			if got := h.DecTTL(); got != uint8(ttl-1) || h.TTL() != uint8(ttl-1) {
				t.Fatalf("DecTTL from %d = %d", ttl, got)
			}
			if !h.ChecksumValid() {
				t.Fatalf("ttl %d id %#x: checksum %#x does not verify (full %#x)", ttl, id, h.Checksum(), h.ComputeChecksum())
			}
		}
	}
}

func TestIPv4EncodePanicsOnLongOptions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	IPv4(make([]byte, 80)).Encode(&IPv4Fields{Options: make([]byte, 41), Source: ip4a, Destination: ip4b})
}

// ipv4Bytes returns a valid IPv4 header of total length tl with the given
// options and ihl, for error tests to break.
func ipv4Bytes(tl int, opts []byte) []byte {
	f := IPv4Fields{TotalLen: uint16(tl), TTL: 1, Protocol: 253, Source: ip4a, Destination: ip4b, Options: opts}
	b := make([]byte, max(tl, f.HeaderLen()))
	IPv4(b).Encode(&f)
	return b
}

func TestParseIPv4Errors(t *testing.T) {
	mod := func(b []byte, fn func([]byte)) []byte { fn(b); return b }
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"19 bytes", ipv4Bytes(20, nil)[:19], ErrTruncated},
		{"version 6", mod(ipv4Bytes(20, nil), func(b []byte) { b[0] = 0x65 }), ErrBadVersion},
		{"version 0", mod(ipv4Bytes(20, nil), func(b []byte) { b[0] = 0x05 }), ErrBadVersion},
		{"ihl 4", mod(ipv4Bytes(20, nil), func(b []byte) { b[0] = 0x44 }), ErrBadIHL},
		{"ihl 0", mod(ipv4Bytes(20, nil), func(b []byte) { b[0] = 0x40 }), ErrBadIHL},
		{"ihl beyond bytes", mod(ipv4Bytes(20, nil), func(b []byte) { b[0] = 0x46 }), ErrTruncated},
		{"total below ihl", mod(ipv4Bytes(24, []byte{1, 1, 1, 1}), func(b []byte) { binary.BigEndian.PutUint16(b[2:], 23) }), ErrBadLength},
		{"total 0", mod(ipv4Bytes(20, nil), func(b []byte) { binary.BigEndian.PutUint16(b[2:], 0) }), ErrBadLength},
		{"total beyond bytes", ipv4Bytes(100, nil)[:99], ErrTruncated},
		{"option length 1", ipv4Bytes(24, []byte{0x44, 1, 0, 0}), ErrBadOption},
		{"option length 0", ipv4Bytes(24, []byte{0x44, 0, 0, 0}), ErrBadOption},
		{"option past header", ipv4Bytes(24, []byte{1, 0x44, 4, 0}), ErrBadOption},
		{"option kind alone at end", ipv4Bytes(24, []byte{1, 1, 1, 0x44}), ErrBadOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIPv4(tt.b)
			wantParseErr(t, err, tt.want, "ipv4")
		})
	}
	// Accepted option layouts.
	for _, opts := range [][]byte{
		{1, 1, 1, 1},       // NOPs
		{0, 0x44, 0, 0},    // End, then anything
		{0x44, 2, 0, 0},    // a length-2 option (the kernel accepts it)
		{0x44, 4, 9, 9},    // exactly filling
		{0x94, 4, 0, 0, 1}, // router alert and padding
	} {
		if _, err := ParseIPv4(ipv4Bytes(28, opts)); err != nil {
			t.Errorf("options % x: %v", opts, err)
		}
	}
	// Padding after Total Length is trimmed.
	b := append(ipv4Bytes(20, nil), 0, 0, 0, 0, 0, 0)
	if h, err := ParseIPv4(b); err != nil || len(h) != 20 || len(h.Payload()) != 0 {
		t.Fatalf("padded: len %d err %v", len(h), err)
	}
}

func TestOptionIterator(t *testing.T) {
	type opt struct {
		kind uint8
		data string
	}
	tests := []struct {
		name string
		b    []byte
		want []opt
		err  error
	}{
		{"empty", nil, nil, nil},
		{"nops", []byte{1, 1, 1}, nil, nil},
		{"end stops", []byte{2, 4, 5, 0xb4, 0, 3, 3, 7}, []opt{{2, "\x05\xb4"}}, nil},
		{"several", []byte{2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2}, []opt{{2, "\x05\xb4"}, {3, "\x07"}, {4, ""}}, nil},
		{"short length", []byte{2, 4, 5, 0xb4, 8, 1}, []opt{{2, "\x05\xb4"}}, ErrBadOption},
		{"overlong", []byte{8, 10, 1, 2}, nil, ErrBadOption},
		{"kind without length", []byte{1, 8}, nil, ErrBadOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []opt
			it := NewOptionIterator(tt.b)
			for {
				k, d, ok := it.Next()
				if !ok {
					break
				}
				got = append(got, opt{k, string(d)})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
			if it.Err() != tt.err {
				t.Fatalf("Err = %v, want %v", it.Err(), tt.err)
			}
			if _, _, ok := it.Next(); ok {
				t.Fatal("Next after the end")
			}
		})
	}
	var zero OptionIterator
	if _, _, ok := zero.Next(); ok || zero.Err() != nil {
		t.Fatal("zero iterator")
	}
}

func TestIPv6(t *testing.T) {
	f := IPv6Fields{TrafficClass: 0xb8, FlowLabel: 0x12345, PayloadLen: 8, NextHeader: IPProtoUDP, HopLimit: 255,
		Source: ip6a, Destination: ip6b}
	b := make([]byte, 52)
	IPv6(b).Encode(&f)
	h, err := ParseIPv6(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 48 || h.Version() != 6 || h.TrafficClass() != 0xb8 || h.FlowLabel() != 0x12345 || h.PayloadLen() != 8 ||
		h.NextHeader() != IPProtoUDP || h.HopLimit() != 255 || h.Source() != ip6a || h.Destination() != ip6b || len(h.Payload()) != 8 {
		t.Fatalf("read back % x", []byte(h))
	}
	if !bytes.Equal(b[:4], []byte{0x6b, 0x81, 0x23, 0x45}) {
		t.Fatalf("first word % x", b[:4])
	}
	h.SetTrafficClass(0x01)
	h.SetFlowLabel(0xfffffff)
	h.SetPayloadLen(4)
	h.SetNextHeader(IPProtoTCP)
	h.SetHopLimit(1)
	h.SetSource(ip4a)
	h.SetDestination(ip6a)
	if h.Version() != 6 || h.TrafficClass() != 1 || h.FlowLabel() != 0xfffff || h.PayloadLen() != 4 || h.NextHeader() != IPProtoTCP ||
		h.HopLimit() != 1 || h.Source() != netip.MustParseAddr("::ffff:198.18.0.1") || h.Destination() != ip6a {
		t.Fatalf("setters: % x", []byte(h))
	}
	// Flow label setter keeps the traffic class, and back.
	h.SetFlowLabel(0x54321)
	if h.TrafficClass() != 1 || h.FlowLabel() != 0x54321 {
		t.Fatal("flow label clobbered traffic class")
	}

	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"39 bytes", b[:39], ErrTruncated},
		{"version 4", append([]byte{0x45}, make([]byte, 39)...), ErrBadVersion},
		{"payload beyond bytes", func() []byte { c := append([]byte(nil), b[:44]...); binary.BigEndian.PutUint16(c[4:], 5); return c }(), ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIPv6(tt.b)
			wantParseErr(t, err, tt.want, "ipv6")
		})
	}
}

// ipv6WithExt builds an IPv6 packet whose payload is the given extension
// headers chain followed by a transport header of tlen bytes.
func ipv6WithExt(first uint8, ext []byte, tlen int) []byte {
	b := make([]byte, IPv6HeaderLen+len(ext)+tlen)
	IPv6(b).Encode(&IPv6Fields{PayloadLen: uint16(len(ext) + tlen), NextHeader: first, HopLimit: 1, Source: ip6a, Destination: ip6b})
	copy(b[IPv6HeaderLen:], ext)
	return b
}

func TestSkipExtensionHeaders(t *testing.T) {
	hbh := []byte{IPProtoDstOpts, 0, 1, 4, 0, 0, 0, 0}                          // 8 bytes, next DstOpts
	dst := []byte{IPProtoRouting, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // 16 bytes, next Routing
	rt := []byte{IPProtoAH, 0, 0, 0, 0, 0, 0, 0}                                // 8 bytes, next AH
	ah := []byte{IPProtoFragment, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}              // (1+2)*4 = 12 bytes, next Fragment
	frag0 := []byte{IPProtoUDP, 0, 0x00, 0x01, 0, 0, 0, 42}                     // offset 0, M set
	fragN := []byte{IPProtoUDP, 0, 0x05, 0xc8, 0, 0, 0, 42}                     // offset 1480, M clear
	atomic := []byte{IPProtoTCP, 0, 0, 0, 0, 0, 0, 1}                           // offset 0, M clear
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	tests := []struct {
		name      string
		first     uint8
		ext       []byte
		tlen      int
		proto     uint8
		off       int
		frag      bool // a fragment header was returned
		isFrag    bool
		want      error
		fragValue uint16
	}{
		{"none", IPProtoUDP, nil, 8, IPProtoUDP, 40, false, false, nil, 0},
		{"all kinds", IPProtoHopByHop, cat(hbh, dst, rt, ah, frag0), 8, IPProtoUDP, 40 + 8 + 16 + 8 + 12 + 8, true, true, nil, 0},
		{"non-first fragment stops", IPProtoFragment, cat(fragN, []byte{IPProtoTCP, 0, 0, 0, 0, 0, 0, 0}), 8, IPProtoUDP, 48, true, true, nil, 1480},
		{"atomic fragment", IPProtoFragment, atomic, 20, IPProtoTCP, 48, true, false, nil, 0},
		{"no next header", IPProtoNoNext, nil, 0, IPProtoNoNext, 40, false, false, nil, 0},
		{"esp", IPProtoDstOpts, []byte{IPProtoESP, 0, 0, 0, 0, 0, 0, 0}, 16, IPProtoESP, 48, false, false, nil, 0},
		{"hbh not first", IPProtoDstOpts, []byte{IPProtoHopByHop, 0, 0, 0, 0, 0, 0, 0, IPProtoUDP, 0, 0, 0, 0, 0, 0, 0}, 8, 0, 0, false, false, ErrBadExtensionHeader, 0},
		{"ext length byte missing", IPProtoRouting, nil, 1, 0, 0, false, false, ErrTruncated, 0},
		{"ext past payload", IPProtoRouting, []byte{IPProtoUDP, 1, 0, 0, 0, 0, 0, 0}, 4, 0, 0, false, false, ErrTruncated, 0},
		{"ah past payload", IPProtoAH, []byte{IPProtoUDP, 4, 0, 0, 0, 0, 0, 0}, 0, 0, 0, false, false, ErrTruncated, 0},
		{"ah length byte missing", IPProtoAH, nil, 1, 0, 0, false, false, ErrTruncated, 0},
		{"fragment short", IPProtoFragment, nil, 7, 0, 0, false, false, ErrTruncated, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseIPv6(ipv6WithExt(tt.first, tt.ext, tt.tlen))
			if err != nil {
				t.Fatal(err)
			}
			proto, off, frag, err := h.SkipExtensionHeaders()
			if tt.want != nil {
				wantParseErr(t, err, tt.want, "ipv6")
				return
			}
			if err != nil || proto != tt.proto || off != tt.off || (frag != nil) != tt.frag {
				t.Fatalf("= %d, %d, %v, %v; want %d, %d, frag %v", proto, off, frag, err, tt.proto, tt.off, tt.frag)
			}
			if frag != nil {
				if frag.IsFragment() != tt.isFrag || frag.FragmentOffset() != tt.fragValue || frag.ID() == 0 {
					t.Fatalf("fragment: %v offset %d M %v ID %d", frag.IsFragment(), frag.FragmentOffset(), frag.MoreFragments(), frag.ID())
				}
				if frag.MoreFragments() != (tt.name == "all kinds") {
					t.Fatal("M flag")
				}
				if frag.NextHeader() == 0 {
					t.Fatal("next header")
				}
			}
		})
	}
	// The walk refuses a view whose Payload Length exceeds it.
	h := IPv6(ipv6WithExt(IPProtoUDP, nil, 8))
	h.SetPayloadLen(9)
	_, _, _, err := h.SkipExtensionHeaders()
	wantParseErr(t, err, ErrTruncated, "ipv6")
}

func TestUDP(t *testing.T) {
	b := make([]byte, 20)
	UDP(b).Encode(&UDPFields{SourcePort: 1234, DestinationPort: 9, Length: 12, Checksum: 0xabcd})
	h, err := ParseUDP(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 12 || h.SourcePort() != 1234 || h.DestinationPort() != 9 || h.Length() != 12 || h.Checksum() != 0xabcd || len(h.Payload()) != 4 {
		t.Fatalf("read back % x", []byte(h))
	}
	h.SetSourcePort(1)
	h.SetDestinationPort(2)
	h.SetLength(8)
	h.SetChecksum(3)
	if h.SourcePort() != 1 || h.DestinationPort() != 2 || h.Length() != 8 || h.Checksum() != 3 || len(h.Payload()) != 0 {
		t.Fatal("setters")
	}
	pseudo := PseudoHeaderChecksumIPv4(ip4a.As4(), ip4b.As4(), IPProtoUDP, 8)
	h.SetChecksum(h.ComputeChecksum(pseudo))
	if !h.ChecksumValid(pseudo) {
		t.Fatal("checksum")
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"7 bytes", make([]byte, 7), ErrTruncated},
		{"length 0", make([]byte, 8), ErrBadLength},
		{"length 7", []byte{0, 0, 0, 0, 0, 7, 0, 0}, ErrBadLength},
		{"length beyond bytes", []byte{0, 0, 0, 0, 0, 9, 0, 0}, ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseUDP(tt.b)
			wantParseErr(t, err, tt.want, "udp")
		})
	}
}

// TestUDPChecksumZeroBecomesOnes builds a datagram whose checksum computes
// to zero and checks 0xffff is returned instead (RFC 768).
func TestUDPChecksumZeroBecomesOnes(t *testing.T) {
	b := make([]byte, 10)
	u := UDP(b)
	u.Encode(&UDPFields{SourcePort: 0x1111, DestinationPort: 0x2222, Length: 10})
	// Sum so far: 0x1111 + 0x2222 + 0x000a = 0x333d; make the payload
	// word bring it to 0xffff.
	binary.BigEndian.PutUint16(b[8:], 0xffff-0x333d)
	if c := u.ComputeChecksum(0); c != 0xffff {
		t.Fatalf("ComputeChecksum = %#04x, want 0xffff", c)
	}
	u.SetChecksum(0xffff)
	if !u.ChecksumValid(0) {
		t.Fatal("0xffff does not verify")
	}
}

func TestTCP(t *testing.T) {
	opts := []byte{TCPOptionMSS, 4, 0x05, 0xb4, TCPOptionSACKPermitted, 2, TCPOptionTimestamp, 10, 0, 0, 0, 1, 0, 0, 0, 2, TCPOptionNOP, TCPOptionWindowScale, 3, 7}
	f := TCPFields{SourcePort: 443, DestinationPort: 50000, Seq: 0xdeadbeef, Ack: 0x01020304, Flags: TCPFlagSYN | TCPFlagACK, AE: true,
		Window: 65535, Checksum: 0, Urgent: 9, Options: opts}
	if f.HeaderLen() != 40 {
		t.Fatalf("HeaderLen = %d", f.HeaderLen())
	}
	b := make([]byte, 45)
	for i := range b {
		b[i] = 0xee
	}
	TCP(b).Encode(&f)
	h, err := ParseTCP(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.SourcePort() != 443 || h.DestinationPort() != 50000 || h.Seq() != 0xdeadbeef || h.Ack() != 0x01020304 ||
		h.HeaderLen() != 40 || h.Flags() != TCPFlagSYN|TCPFlagACK || !h.AE() || h[12]&0x0e != 0 || h.Window() != 65535 || h.Checksum() != 0 || h.Urgent() != 9 ||
		!bytes.Equal(h.Options(), opts) || len(h.Payload()) != 5 {
		t.Fatalf("read back % x", []byte(h))
	}
	o, err := h.ParseOptions()
	if err != nil || !o.HasMSS || o.MSS != 1460 || !o.SACKPermitted || !o.HasTimestamp || o.TSVal != 1 || o.TSEcr != 2 ||
		!o.HasWindowScale || o.WindowScale != 7 {
		t.Fatalf("options %+v, %v", o, err)
	}
	h.SetSourcePort(1)
	h.SetDestinationPort(2)
	h.SetSeq(3)
	h.SetAck(4)
	h.SetFlags(TCPFlagFIN)
	h.SetWindow(5)
	h.SetUrgent(6)
	h[12] |= 0x0e // the reserved bits, which SetHeaderLen clears, keeping AE
	h.SetHeaderLen(20)
	if !h.AE() || h[12] != 5<<4|1 {
		t.Fatalf("SetHeaderLen(20) over AE and the reserved bits: byte 12 %#x", h[12])
	}
	h.SetAE(false)
	pseudo := PseudoHeaderChecksumIPv4(ip4a.As4(), ip4b.As4(), IPProtoTCP, uint16(len(h)))
	h.SetChecksum(h.ComputeChecksum(pseudo))
	if h.SourcePort() != 1 || h.DestinationPort() != 2 || h.Seq() != 3 || h.Ack() != 4 || h.Flags() != TCPFlagFIN ||
		h.Window() != 5 || h.Urgent() != 6 || h.HeaderLen() != 20 || len(h.Options()) != 0 || !h.ChecksumValid(pseudo) {
		t.Fatal("setters")
	}
	if o, err := h.ParseOptions(); err != nil || o != (TCPOptions{}) {
		t.Fatalf("no options: %+v %v", o, err)
	}

	// Malformed options are kept by ParseTCP and reported by ParseOptions,
	// after what came before them.
	bad := make([]byte, 28)
	TCP(bad).Encode(&TCPFields{Options: []byte{TCPOptionMSS, 4, 0x05, 0xb4, TCPOptionTimestamp, 10, 0, 0}})
	bh, err := ParseTCP(bad)
	if err != nil {
		t.Fatal(err)
	}
	bo, err := bh.ParseOptions()
	wantParseErr(t, err, ErrBadOption, "tcp")
	if !bo.HasMSS || bo.HasTimestamp {
		t.Fatalf("options before the bad one: %+v", bo)
	}
	// Wrong-length known options are ignored.
	odd := make([]byte, 28)
	TCP(odd).Encode(&TCPFields{Options: []byte{TCPOptionMSS, 3, 5, TCPOptionWindowScale, 2, 0, 0, 0}})
	if o, err := TCP(odd).ParseOptions(); err != nil || o.HasMSS || o.HasWindowScale {
		t.Fatalf("wrong lengths: %+v %v", o, err)
	}

	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"19 bytes", make([]byte, 19), ErrTruncated},
		{"offset 0", make([]byte, 20), ErrBadDataOffset},
		{"offset 4", func() []byte { c := make([]byte, 20); c[12] = 0x40; return c }(), ErrBadDataOffset},
		{"offset beyond bytes", func() []byte { c := make([]byte, 23); c[12] = 0x60; return c }(), ErrTruncated},
		{"offset 15 in 59 bytes", func() []byte { c := make([]byte, 59); c[12] = 0xf0; return c }(), ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTCP(tt.b)
			wantParseErr(t, err, tt.want, "tcp")
		})
	}
}

func TestTCPEncodePanicsOnLongOptions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	TCP(make([]byte, 80)).Encode(&TCPFields{Options: make([]byte, 41)})
}

func TestICMPv4(t *testing.T) {
	b := make([]byte, 12)
	ICMPv4(b).Encode(&ICMPv4Fields{Type: ICMPv4Echo, Code: 0, Checksum: 0, Rest: 0x12340005})
	h, err := ParseICMPv4(b)
	if err != nil {
		t.Fatal(err)
	}
	copy(h.Payload(), "ping")
	h.SetChecksum(h.ComputeChecksum())
	if h.Type() != ICMPv4Echo || h.Code() != 0 || h.ID() != 0x1234 || h.Sequence() != 5 || h.Rest() != 0x12340005 ||
		string(h.Payload()) != "ping" || !h.ChecksumValid() {
		t.Fatalf("read back % x", []byte(h))
	}
	h.SetType(ICMPv4DestUnreach)
	h.SetCode(ICMPv4CodeFragNeeded)
	h.SetRest(1400)
	if h.MTU() != 1400 || h.Type() != 3 || h.Code() != 4 || h.ChecksumValid() {
		t.Fatal("setters")
	}
	h.SetRest(0)
	h.SetID(7)
	h.SetSequence(8)
	if h.ID() != 7 || h.Sequence() != 8 {
		t.Fatal("echo setters")
	}
	h.SetRest(0x0c000000)
	if h.Pointer() != 12 {
		t.Fatal("pointer")
	}
	_, err = ParseICMPv4(make([]byte, 7))
	wantParseErr(t, err, ErrTruncated, "icmpv4")
}

func TestICMPv6(t *testing.T) {
	b := make([]byte, 12)
	ICMPv6(b).Encode(&ICMPv6Fields{Type: ICMPv6EchoRequest, Rest: 0x00010002})
	h, err := ParseICMPv6(b)
	if err != nil {
		t.Fatal(err)
	}
	pseudo := PseudoHeaderChecksumIPv6(ip6a.As16(), ip6b.As16(), IPProtoICMPv6, uint32(len(h)))
	h.SetChecksum(h.ComputeChecksum(pseudo))
	if h.Type() != ICMPv6EchoRequest || h.Code() != 0 || h.ID() != 1 || h.Sequence() != 2 || h.Rest() != 0x00010002 ||
		len(h.Payload()) != 4 || !h.ChecksumValid(pseudo) || h.ChecksumValid(pseudo+1) {
		t.Fatalf("read back % x", []byte(h))
	}
	h.SetType(ICMPv6PacketTooBig)
	h.SetCode(0)
	h.SetRest(1280)
	if h.MTU() != 1280 || h.Pointer() != 1280 || h.Type() != 2 || h.Code() != 0 {
		t.Fatal("setters")
	}
	h.SetID(3)
	h.SetSequence(4)
	if h.ID() != 3 || h.Sequence() != 4 {
		t.Fatal("echo setters")
	}
	_, err = ParseICMPv6(make([]byte, 7))
	wantParseErr(t, err, ErrTruncated, "icmpv6")
}
