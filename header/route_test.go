package header

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"testing"
)

// TestFinalDestinationTshark checks a frame whose UDP checksum tshark
// (4.0, udp.check_checksum on) calls correct: IPv6 with a type 2 Routing
// header, Segments Left 1, whose home address 2001:db8::1 is the final
// destination the pseudo-header holds (RFC 8200 section 8.1).
func TestFinalDestinationTshark(t *testing.T) {
	b, err := hex.DecodeString("02000000000202000000000186dd6000000000202b4020010db800000000000000000000000220010db8000000000000000000000002110202010000000020010db8000000000000000000000001000100020008a466")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFrame(b)
	if err != nil || f.Protocol != IPProtoUDP {
		t.Fatalf("%v, protocol %d", err, f.Protocol)
	}
	if err := f.VerifyChecksum(b); err != nil {
		t.Fatal(err)
	}
	d := IPv6(b[f.NetworkOffset:]).FinalDestination()
	if got := netip.AddrFrom16(d); got != netip.MustParseAddr("2001:db8::1") {
		t.Fatalf("final destination %v", got)
	}
	b[f.NetworkOffset+IPv6HeaderLen+3] = 0 // Segments Left 0: the Destination field
	if err := f.VerifyChecksum(b); err == nil {
		t.Fatal("checksum over the home address with Segments Left 0")
	}
}

// TestFinalDestination builds a UDP datagram to the final destination fin,
// checksummed by BuildUDP, then routes it through a Routing header of each
// type: the Destination field becomes the next hop, the checksum stays,
// and VerifyChecksum must take it.
func TestFinalDestination(t *testing.T) {
	fin := netip.MustParseAddr("2001:db8:aa:bb:cc:dd:ee:ff")
	hop := netip.MustParseAddr("2001:db8:aa:bb::7")
	other := netip.MustParseAddr("2001:db8:1::1")
	a16 := func(a netip.Addr) []byte { s := a.As16(); return s[:] }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	// RPL, RFC 6554: CmprI 8 (8-byte addresses sharing the Destination's
	// first 8 bytes), CmprE 8 (the last one too), two addresses.
	rplHdr := cat([]byte{0, 2, IPv6RoutingRPL, 2, 0x88, 0, 0, 0}, a16(other)[8:], a16(fin)[8:])
	tests := []struct {
		name  string
		rt    []byte // the Routing header, Next Header filled in
		final bool   // the checksum is over fin (else over the Destination field)
	}{
		{"type 0, two addresses", cat([]byte{0, 4, IPv6RoutingType0, 2, 0, 0, 0, 0}, a16(other), a16(fin)), true},
		{"type 2", cat([]byte{0, 2, IPv6RoutingType2, 1, 0, 0, 0, 0}, a16(fin)), true},
		{"segment routing", cat([]byte{0, 4, IPv6RoutingSegments, 1, 1, 0, 0, 0}, a16(fin), a16(other)), true},
		{"RPL", rplHdr, true},
		{"type 2, Segments Left 0", cat([]byte{0, 2, IPv6RoutingType2, 0, 0, 0, 0, 0}, a16(fin)), false},
		{"unknown type", cat([]byte{0, 2, 9, 1, 0, 0, 0, 0}, a16(fin)), false},
		{"RPL, sizes that do not add up", cat([]byte{0, 2, IPv6RoutingRPL, 2, 0x87, 0, 0, 0}, a16(other)[8:], a16(fin)[8:]), false},
	}
	for _, tc := range tests {
		to := hop
		if tc.final {
			to = fin
		}
		u := &UDPFrame{Source: mac1, Destination: mac2, SourceIP: ip6a, DestinationIP: to, SourcePort: 9000, DestinationPort: 9}
		plain := udpFrame(t, u, 20)
		n := EthernetHeaderLen
		rt := append([]byte{}, tc.rt...)
		rt[0] = IPProtoUDP
		b := cat(plain[:n+IPv6HeaderLen], rt, plain[n+IPv6HeaderLen:])
		ip := IPv6(b[n:])
		ip[6] = IPProtoRouting
		binary.BigEndian.PutUint16(ip[4:6], ip.PayloadLen()+uint16(len(rt)))
		ip.SetDestination(hop)
		f, err := ParseFrame(b)
		if err != nil || f.Protocol != IPProtoUDP {
			t.Fatalf("%s: %v, protocol %d", tc.name, err, f.Protocol)
		}
		if err := f.VerifyChecksum(b); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		want := hop
		if tc.final {
			want = fin
		}
		if got := netip.AddrFrom16(ip.FinalDestination()); got != want {
			t.Errorf("%s: final destination %v, want %v", tc.name, got, want)
		}
		// The pseudo-header sum of the view agrees.
		l := uint32(len(b) - f.TransportOffset)
		d := a16(want)
		if got, w := ip.PseudoHeaderChecksum(IPProtoUDP, l), pseudo6(ip[8:24], d, IPProtoUDP, l); got != w {
			t.Errorf("%s: pseudo-header %#x, want %#x", tc.name, got, w)
		}
	}
}
