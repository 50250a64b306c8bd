package header

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// udpFrame builds a checksummed UDP frame with a payload of n bytes.
func udpFrame(t testing.TB, f *UDPFrame, n int) []byte {
	t.Helper()
	b := make([]byte, f.HeaderLen()+n)
	for i := f.HeaderLen(); i < len(b); i++ {
		b[i] = byte(i)
	}
	if _, err := BuildUDP(b, f); err != nil {
		t.Fatal(err)
	}
	return b
}

func udp4Frame() *UDPFrame {
	return &UDPFrame{Source: mac1, Destination: mac2, SourceIP: ip4a, DestinationIP: ip4b, SourcePort: 9000, DestinationPort: 9}
}

func udp6Frame() *UDPFrame {
	return &UDPFrame{Source: mac1, Destination: mac2, SourceIP: ip6a, DestinationIP: ip6b, SourcePort: 9000, DestinationPort: 9}
}

func TestBuildUDP(t *testing.T) {
	tests := []struct {
		name string
		f    *UDPFrame
		n    int
	}{
		{"ipv4", udp4Frame(), 18},
		{"ipv4 empty", udp4Frame(), 0},
		{"ipv4 odd", udp4Frame(), 1473},
		{"ipv6", udp6Frame(), 100},
		{"ipv4 vlan", func() *UDPFrame { f := udp4Frame(); f.VLANProto, f.VLANTCI = EtherTypeVLAN, 0x2064; return f }(), 64},
		{"ipv6 qinq", func() *UDPFrame { f := udp6Frame(); f.VLANProto, f.VLANTCI = EtherTypeQinQ, 7; return f }(), 3},
		{"ipv4 fields", func() *UDPFrame {
			f := udp4Frame()
			f.TOS, f.TTL, f.ID, f.DontFragment = 0x10, 3, 99, true
			return f
		}(), 10},
		{"ipv6 fields", func() *UDPFrame { f := udp6Frame(); f.TOS, f.TTL, f.FlowLabel = 0x10, 3, 0xbeef; return f }(), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, tt.f.HeaderLen()+tt.n)
			built, err := BuildUDP(b, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := ParseFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			if parsed != built {
				t.Fatalf("BuildUDP returned %+v, ParseFrame %+v", built, parsed)
			}
			if err := parsed.VerifyChecksum(b); err != nil {
				t.Fatal(err)
			}
			eth := Ethernet(b)
			if eth.Source() != tt.f.Source || eth.Destination() != tt.f.Destination {
				t.Fatal("MAC addresses")
			}
			if tt.f.VLANProto != 0 && (eth.EtherType() != tt.f.VLANProto || VLAN(eth.Payload()).TCI() != tt.f.VLANTCI) {
				t.Fatal("VLAN tag")
			}
			ttl := tt.f.TTL
			if ttl == 0 {
				ttl = DefaultTTL
			}
			nw := b[parsed.NetworkOffset:]
			if tt.f.SourceIP.Is4() {
				ip := IPv4(nw)
				if ip.Source() != tt.f.SourceIP || ip.Destination() != tt.f.DestinationIP || ip.TTL() != ttl || ip.TOS() != tt.f.TOS ||
					ip.ID() != tt.f.ID || (ip.Flags() == IPv4FlagDontFragment) != tt.f.DontFragment || int(ip.TotalLen()) != len(nw) {
					t.Fatalf("IPv4 % x", nw[:20])
				}
			} else {
				ip := IPv6(nw)
				if ip.Source() != tt.f.SourceIP || ip.Destination() != tt.f.DestinationIP || ip.HopLimit() != ttl ||
					ip.TrafficClass() != tt.f.TOS || ip.FlowLabel() != tt.f.FlowLabel || int(ip.PayloadLen()) != len(nw)-40 {
					t.Fatalf("IPv6 % x", nw[:40])
				}
			}
			u := UDP(b[parsed.TransportOffset:])
			if u.SourcePort() != 9000 || u.DestinationPort() != 9 || int(u.Length()) != UDPHeaderLen+tt.n {
				t.Fatal("UDP")
			}
		})
	}
}

func TestBuildUDPChecksumModes(t *testing.T) {
	for _, f := range []*UDPFrame{udp4Frame(), udp6Frame()} {
		full := udpFrame(t, f, 333)

		f.NoChecksum = true
		none := udpFrame(t, f, 333)
		fr, _ := ParseFrame(none)
		if UDP(none[fr.TransportOffset:]).Checksum() != 0 {
			t.Fatal("NoChecksum wrote a checksum")
		}
		err := fr.VerifyChecksum(none)
		if f.SourceIP.Is4() && err != nil {
			t.Fatalf("IPv4 zero checksum: %v", err)
		}
		if !f.SourceIP.Is4() && !errors.Is(err, ErrBadChecksum) {
			t.Fatalf("IPv6 zero checksum: %v", err)
		}

		f.NoChecksum, f.PartialChecksum = false, true
		partial := udpFrame(t, f, 333)
		fr, _ = ParseFrame(partial)
		if err := fr.VerifyChecksum(partial); !errors.Is(err, ErrBadChecksum) {
			t.Fatalf("partial verified: %v", err)
		}
		if err := FinishChecksum(partial, fr.TransportOffset, 6); err != nil {
			t.Fatal(err)
		}
		if string(partial) != string(full) {
			t.Fatal("finished partial differs from full")
		}
	}
}

// TestBuildUDPZone checks that an IPv6 zone changes nothing in the frame:
// it names an interface, not header bytes.
func TestBuildUDPZone(t *testing.T) {
	f := udp6Frame()
	plain := udpFrame(t, f, 100)
	f.SourceIP, f.DestinationIP = f.SourceIP.WithZone("eth0"), f.DestinationIP.WithZone("7")
	if zoned := udpFrame(t, f, 100); string(zoned) != string(plain) {
		t.Fatalf("zoned addresses built % x, want % x", zoned, plain)
	}
}

func TestBuildUDPErrors(t *testing.T) {
	tests := []struct {
		name string
		f    *UDPFrame
		n    int
		want error
	}{
		{"no addresses", &UDPFrame{}, 100, ErrBadAddress},
		{"no destination", &UDPFrame{SourceIP: ip4a}, 100, ErrBadAddress},
		{"mixed families", &UDPFrame{SourceIP: ip4a, DestinationIP: ip6b}, 100, ErrBadAddress},
		{"mapped is not 4", &UDPFrame{SourceIP: ip4a, DestinationIP: netip.MustParseAddr("::ffff:1.2.3.4")}, 100, ErrBadAddress},
		{"short", udp4Frame(), 41, ErrTruncated},
		{"short v6", udp6Frame(), 61, ErrTruncated},
		{"ipv4 too long", udp4Frame(), 14 + 65536, ErrBadLength},
		{"ipv6 too long", udp6Frame(), 54 + 65536, ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, tt.n)
			if _, err := BuildUDP(b, tt.f); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			for _, c := range b {
				if c != 0 {
					t.Fatal("frame written on error")
				}
			}
		})
	}
	// The longest that fit.
	if _, err := BuildUDP(make([]byte, 14+65535), udp4Frame()); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildUDP(make([]byte, 54+65535), udp6Frame()); err != nil {
		t.Fatal(err)
	}
}

// tcpFrame builds an Ethernet/IPv4 or IPv6/TCP frame with options and n bytes
// of payload, checksummed.
func tcpFrame(v6 bool, n int) []byte {
	opts := []byte{TCPOptionMSS, 4, 5, 0xb4}
	tl := TCPMinHeaderLen + len(opts) + n
	var b []byte
	var pseudo uint16
	if v6 {
		b = make([]byte, 14+40+tl)
		Ethernet(b).Encode(&EthernetFields{Source: mac1, Destination: mac2, EtherType: EtherTypeIPv6})
		ip := IPv6(b[14:])
		ip.Encode(&IPv6Fields{PayloadLen: uint16(tl), NextHeader: IPProtoTCP, HopLimit: 64, Source: ip6a, Destination: ip6b})
		pseudo = ip.PseudoHeaderChecksum(IPProtoTCP, uint32(tl))
	} else {
		b = make([]byte, 14+20+tl)
		Ethernet(b).Encode(&EthernetFields{Source: mac1, Destination: mac2, EtherType: EtherTypeIPv4})
		ip := IPv4(b[14:])
		ip.Encode(&IPv4Fields{TotalLen: uint16(20 + tl), TTL: 64, Protocol: IPProtoTCP, Source: ip4a, Destination: ip4b})
		pseudo = ip.PseudoHeaderChecksum(IPProtoTCP, uint16(tl))
	}
	tcp := TCP(b[len(b)-tl:])
	tcp.Encode(&TCPFields{SourcePort: 1, DestinationPort: 2, Seq: 3, Flags: TCPFlagACK, Window: 100, Options: opts})
	for i := range n {
		tcp[TCPMinHeaderLen+len(opts)+i] = byte(i * 7)
	}
	tcp.SetChecksum(tcp.ComputeChecksum(pseudo))
	return b
}

func icmpFrame(v6 bool) []byte {
	if v6 {
		b := make([]byte, 14+40+16)
		Ethernet(b).Encode(&EthernetFields{EtherType: EtherTypeIPv6})
		ip := IPv6(b[14:])
		ip.Encode(&IPv6Fields{PayloadLen: 16, NextHeader: IPProtoICMPv6, HopLimit: 64, Source: ip6a, Destination: ip6b})
		m := ICMPv6(b[54:])
		m.Encode(&ICMPv6Fields{Type: ICMPv6EchoRequest, Rest: 1})
		m.SetChecksum(m.ComputeChecksum(ip.PseudoHeaderChecksum(IPProtoICMPv6, 16)))
		return b
	}
	b := make([]byte, 14+20+16)
	Ethernet(b).Encode(&EthernetFields{EtherType: EtherTypeIPv4})
	IPv4(b[14:]).Encode(&IPv4Fields{TotalLen: 36, TTL: 64, Protocol: IPProtoICMP, Source: ip4a, Destination: ip4b})
	m := ICMPv4(b[34:])
	m.Encode(&ICMPv4Fields{Type: ICMPv4Echo, Rest: 1})
	m.SetChecksum(m.ComputeChecksum())
	return b
}

func arpFrame() []byte {
	b := make([]byte, EthernetMinFrameLen)
	Ethernet(b).Encode(&EthernetFields{Destination: BroadcastMAC, Source: mac1, EtherType: EtherTypeARP})
	ARP(b[14:]).Encode(&ARPFields{HardwareType: 1, ProtocolType: EtherTypeIPv4, Op: ARPRequest,
		SenderHardwareAddr: mac1[:], SenderProtocolAddr: ip4a.AsSlice(), TargetHardwareAddr: make([]byte, 6), TargetProtocolAddr: ip4b.AsSlice()})
	return b
}

func TestParseFrame(t *testing.T) {
	v4frag := udpFrame(t, udp4Frame(), 100)
	IPv4(v4frag[14:]).SetFlagsFragmentOffset(IPv4FlagMoreFragments, 0)
	IPv4(v4frag[14:]).SetChecksum(IPv4(v4frag[14:]).ComputeChecksum())
	UDP(v4frag[34:]).SetLength(5000) // the first fragment's UDP length covers the whole datagram
	v6frag := make([]byte, 14+40+8+16)
	Ethernet(v6frag).Encode(&EthernetFields{EtherType: EtherTypeIPv6})
	IPv6(v6frag[14:]).Encode(&IPv6Fields{PayloadLen: 24, NextHeader: IPProtoFragment, Source: ip6a, Destination: ip6b})
	copy(v6frag[54:], []byte{IPProtoUDP, 0, 0x05, 0xc8, 0, 0, 0, 1})
	padded := append(udpFrame(t, udp4Frame(), 2), make([]byte, 16)...)
	unknownProto := udpFrame(t, udp4Frame(), 20)
	IPv4(unknownProto[14:]).SetProtocol(IPProtoGRE)
	IPv4(unknownProto[14:]).SetChecksum(IPv4(unknownProto[14:]).ComputeChecksum())
	v6ext := make([]byte, 14+40+8+8)
	Ethernet(v6ext).Encode(&EthernetFields{EtherType: EtherTypeIPv6})
	IPv6(v6ext[14:]).Encode(&IPv6Fields{PayloadLen: 16, NextHeader: IPProtoHopByHop, Source: ip6a, Destination: ip6b})
	copy(v6ext[54:], []byte{IPProtoUDP, 0, 1, 4, 0, 0, 0, 0})
	UDP(v6ext[62:]).Encode(&UDPFields{Length: 8})
	UDP(v6ext[62:]).SetChecksum(UDP(v6ext[62:]).ComputeChecksum(IPv6(v6ext[14:]).PseudoHeaderChecksum(IPProtoUDP, 8)))
	twoTags := make([]byte, 14+8+20)
	Ethernet(twoTags).Encode(&EthernetFields{EtherType: EtherTypeQinQ})
	VLAN(twoTags[14:]).Encode(&VLANFields{ID: 100, EtherType: EtherTypeVLAN})
	VLAN(twoTags[18:]).Encode(&VLANFields{ID: 200, EtherType: EtherTypeIPv4})
	IPv4(twoTags[22:]).Encode(&IPv4Fields{TotalLen: 20, Protocol: IPProtoNoNext, Source: ip4a, Destination: ip4b})

	tests := []struct {
		name string
		b    []byte
		want Frame
	}{
		{"udp4", udpFrame(t, udp4Frame(), 10), Frame{14, 34, 42, 52, EtherTypeIPv4, 0, 0, IPProtoUDP, false}},
		{"udp6", udpFrame(t, udp6Frame(), 10), Frame{14, 54, 62, 72, EtherTypeIPv6, 0, 0, IPProtoUDP, false}},
		{"tcp4", tcpFrame(false, 5), Frame{14, 34, 58, 63, EtherTypeIPv4, 0, 0, IPProtoTCP, false}},
		{"tcp6", tcpFrame(true, 0), Frame{14, 54, 78, 78, EtherTypeIPv6, 0, 0, IPProtoTCP, false}},
		{"icmp4", icmpFrame(false), Frame{14, 34, 42, 50, EtherTypeIPv4, 0, 0, IPProtoICMP, false}},
		{"icmp6", icmpFrame(true), Frame{14, 54, 62, 70, EtherTypeIPv6, 0, 0, IPProtoICMPv6, false}},
		{"arp", arpFrame(), Frame{14, 0, 0, 42, EtherTypeARP, 0, 0, 0, false}},
		{"vlan udp4", func() []byte {
			f := udp4Frame()
			f.VLANProto, f.VLANTCI = EtherTypeVLAN, 5
			return udpFrame(t, f, 1)
		}(), Frame{18, 38, 46, 47, EtherTypeIPv4, EtherTypeVLAN, 5, IPProtoUDP, false}},
		{"two tags", twoTags, Frame{22, 42, 0, 42, EtherTypeIPv4, EtherTypeQinQ, 100, IPProtoNoNext, false}},
		{"ipv4 first fragment", v4frag, Frame{14, 34, 0, 142, EtherTypeIPv4, 0, 0, IPProtoUDP, true}},
		{"ipv6 later fragment", v6frag, Frame{14, 62, 0, 78, EtherTypeIPv6, 0, 0, IPProtoUDP, true}},
		{"ipv6 hop-by-hop", v6ext, Frame{14, 62, 70, 70, EtherTypeIPv6, 0, 0, IPProtoUDP, false}},
		{"padding trimmed", padded, Frame{14, 34, 42, 44, EtherTypeIPv4, 0, 0, IPProtoUDP, false}},
		{"unknown protocol", unknownProto, Frame{14, 34, 0, 62, EtherTypeIPv4, 0, 0, IPProtoGRE, false}},
		{"unknown ethertype", append([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x88, 0xcc}, 1, 2, 3), Frame{14, 0, 0, 17, 0x88cc, 0, 0, 0, false}},
		{"802.3 length", append(make([]byte, 12), 0, 3, 0xaa, 0xaa, 3), Frame{14, 0, 0, 17, EtherType8022, 0, 0, 0, false}},
		// eth_type_trans's protocols for an 802.3 length: LLC (802.2), or
		// raw 802.3 when the payload starts 0xffff; End at the length,
		// before the padding to 60 bytes, also after a VLAN tag.
		{"802.3 LLC padded", append(append(make([]byte, 12), 0, 3, 0x42, 0x42, 3), make([]byte, 43)...), Frame{14, 0, 0, 17, EtherType8022, 0, 0, 0, false}},
		{"802.3 raw", append(append(make([]byte, 12), 0, 4, 0xff, 0xff, 0, 4), make([]byte, 42)...), Frame{14, 0, 0, 18, EtherType8023, 0, 0, 0, false}},
		{"802.3 in a VLAN", append(append(make([]byte, 12), 0x81, 0, 0, 5, 0, 3, 0x42, 0x42, 3), make([]byte, 39)...), Frame{18, 0, 0, 21, EtherType8022, EtherTypeVLAN, 5, 0, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFrame(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if err := got.VerifyChecksum(tt.b); err != nil {
				t.Fatalf("VerifyChecksum: %v", err)
			}
		})
	}
}

func TestParseFrameErrors(t *testing.T) {
	mod := func(b []byte, fn func([]byte)) []byte { fn(b); return b }
	tests := []struct {
		name  string
		b     []byte
		want  error
		layer string
	}{
		{"short ethernet", make([]byte, 13), ErrTruncated, "ethernet"},
		{"802.3 length past the end", append(make([]byte, 12), 0x05, 0xdc, 0xaa, 0xaa, 3), ErrTruncated, "ethernet"},
		{"short vlan", append(make([]byte, 12), 0x81, 0, 0, 1, 8), ErrTruncated, "vlan"},
		{"short second vlan", append(make([]byte, 12), 0x88, 0xa8, 0, 1, 0x81, 0, 0, 1), ErrTruncated, "vlan"},
		{"short arp", append(make([]byte, 12), 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, 0), ErrTruncated, "arp"},
		{"short ipv4", append(make([]byte, 12), 0x08, 0x00, 0x45), ErrTruncated, "ipv4"},
		{"ipv4 version", mod(udpFrame(t, udp4Frame(), 0), func(b []byte) { b[14] = 0x55 }), ErrBadVersion, "ipv4"},
		{"ipv4 ihl", mod(udpFrame(t, udp4Frame(), 0), func(b []byte) { b[14] = 0x43 }), ErrBadIHL, "ipv4"},
		{"ipv4 total length", mod(udpFrame(t, udp4Frame(), 0), func(b []byte) { IPv4(b[14:]).SetTotalLen(29) }), ErrTruncated, "ipv4"},
		{"ipv6 version", mod(udpFrame(t, udp6Frame(), 0), func(b []byte) { b[14] = 0x40 }), ErrBadVersion, "ipv6"},
		{"ipv6 payload", mod(udpFrame(t, udp6Frame(), 0), func(b []byte) { IPv6(b[14:]).SetPayloadLen(9) }), ErrTruncated, "ipv6"},
		{"ipv6 ext", mod(udpFrame(t, udp6Frame(), 0), func(b []byte) { IPv6(b[14:]).SetNextHeader(IPProtoRouting); b[55] = 4 }), ErrTruncated, "ipv6"},
		{"udp length small", mod(udpFrame(t, udp4Frame(), 4), func(b []byte) { UDP(b[34:]).SetLength(7) }), ErrBadLength, "udp"},
		{"udp length big", mod(udpFrame(t, udp6Frame(), 4), func(b []byte) { UDP(b[54:]).SetLength(13) }), ErrTruncated, "udp"},
		{"udp short", mod(udpFrame(t, udp4Frame(), 0), func(b []byte) { IPv4(b[14:]).SetTotalLen(27) }), ErrTruncated, "udp"},
		{"tcp data offset", mod(tcpFrame(false, 0), func(b []byte) { b[34+12] = 0x40 }), ErrBadDataOffset, "tcp"},
		{"tcp header", mod(tcpFrame(true, 3), func(b []byte) { b[54+12] = 0xf0 }), ErrTruncated, "tcp"},
		{"icmp4 short", mod(icmpFrame(false), func(b []byte) { IPv4(b[14:]).SetTotalLen(27) }), ErrTruncated, "icmpv4"},
		{"icmp6 short", mod(icmpFrame(true), func(b []byte) { IPv6(b[14:]).SetPayloadLen(7) }), ErrTruncated, "icmpv6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFrame(tt.b)
			wantParseErr(t, err, tt.want, tt.layer)
		})
	}
}

func TestParsePacket(t *testing.T) {
	u4 := udpFrame(t, udp4Frame(), 10)[14:]
	f, err := ParsePacket(u4)
	if err != nil || f != (Frame{0, 20, 28, 38, EtherTypeIPv4, 0, 0, IPProtoUDP, false}) {
		t.Fatalf("%+v %v", f, err)
	}
	if err := f.VerifyChecksum(u4); err != nil {
		t.Fatal(err)
	}
	t6 := tcpFrame(true, 9)[14:]
	f, err = ParsePacket(t6)
	if err != nil || f != (Frame{0, 40, 64, 73, EtherTypeIPv6, 0, 0, IPProtoTCP, false}) {
		t.Fatalf("%+v %v", f, err)
	}
	if err := f.VerifyChecksum(t6); err != nil {
		t.Fatal(err)
	}
	_, err = ParsePacket(nil)
	wantParseErr(t, err, ErrTruncated, "ip")
	_, err = ParsePacket([]byte{0x55, 0, 0})
	wantParseErr(t, err, ErrBadVersion, "ip")
	_, err = ParsePacket([]byte{0x45, 0, 0})
	wantParseErr(t, err, ErrTruncated, "ipv4")
	_, err = ParsePacket([]byte{0x60, 0, 0})
	wantParseErr(t, err, ErrTruncated, "ipv6")
}

func TestVerifyChecksum(t *testing.T) {
	tests := []struct {
		name  string
		b     []byte
		at    int // byte to corrupt, from the end when negative
		layer string
	}{
		{"ipv4 header", udpFrame(t, udp4Frame(), 10), 14 + 8, "ipv4"},
		{"udp4", udpFrame(t, udp4Frame(), 10), -1, "udp"},
		{"udp6", udpFrame(t, udp6Frame(), 11), -1, "udp"},
		{"tcp4", tcpFrame(false, 10), -1, "tcp"},
		{"tcp6", tcpFrame(true, 0), -4, "tcp"},
		{"icmp4", icmpFrame(false), -1, "icmpv4"},
		{"icmp6", icmpFrame(true), -1, "icmpv6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFrame(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.VerifyChecksum(tt.b); err != nil {
				t.Fatalf("intact: %v", err)
			}
			at := tt.at
			if at < 0 {
				at += len(tt.b)
			}
			tt.b[at] ^= 0x40
			wantParseErr(t, f.VerifyChecksum(tt.b), ErrBadChecksum, tt.layer)
		})
	}
	// A pseudo-header field counts: changing the IPv4 source breaks UDP
	// (after the IPv4 header checksum is fixed).
	b := udpFrame(t, udp4Frame(), 10)
	ip := IPv4(b[14:])
	ip.SetSource(netip.MustParseAddr("198.18.0.9"))
	ip.SetChecksum(ip.ComputeChecksum())
	f, _ := ParseFrame(b)
	wantParseErr(t, f.VerifyChecksum(b), ErrBadChecksum, "udp")
	// Fragments, ARP and unknown protocols verify only what they have.
	arp := arpFrame()
	if f, _ := ParseFrame(arp); f.VerifyChecksum(arp) != nil {
		t.Fatal("arp")
	}
	frag := udpFrame(t, udp4Frame(), 10)
	IPv4(frag[14:]).SetFlagsFragmentOffset(0, 64)
	IPv4(frag[14:]).SetChecksum(IPv4(frag[14:]).ComputeChecksum())
	frag[len(frag)-1] ^= 1
	if f, _ := ParseFrame(frag); !f.Fragment || f.VerifyChecksum(frag) != nil {
		t.Fatal("fragment")
	}
}

// TestNATRewrite rewrites an IPv4 source address and UDP port the way a NAT
// does, with incremental updates of the IP and UDP checksums, and checks the
// frame still verifies.
func TestNATRewrite(t *testing.T) {
	for _, n := range []int{0, 1, 100} {
		b := udpFrame(t, udp4Frame(), n)
		ip, u := IPv4(b[14:]), UDP(b[34:])
		oldAddr := binary.BigEndian.Uint32(ip[12:16])
		newIP := netip.MustParseAddr("203.0.113.77")
		na := newIP.As4()
		newAddr := binary.BigEndian.Uint32(na[:])
		ip.SetSource(newIP)
		ip.SetChecksum(ChecksumUpdate32(ip.Checksum(), oldAddr, newAddr))
		// The UDP checksum covers the address through the pseudo-header.
		c := ChecksumUpdate32(u.Checksum(), oldAddr, newAddr)
		oldPort := u.SourcePort()
		u.SetSourcePort(40000)
		c = ChecksumUpdate16(c, oldPort, 40000)
		if c == 0 {
			c = 0xffff
		}
		u.SetChecksum(c)
		f, err := ParseFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.VerifyChecksum(b); err != nil {
			t.Fatalf("payload %d: %v", n, err)
		}
		if !sameOnesComplement(u.Checksum(), u.ComputeChecksum(ip.PseudoHeaderChecksum(IPProtoUDP, u.Length()))) {
			t.Fatal("incremental differs from recomputed")
		}
	}
}

// TestBuildUDPVLAN checks BuildUDP's tag: an untagged frame reports no TCI
// whatever VLANTCI holds, as ParseFrame reports it, and a tag protocol that
// is neither 802.1Q nor 802.1ad is refused with the frame unchanged.
func TestBuildUDPVLAN(t *testing.T) {
	f := UDPFrame{SourceIP: ip4a, DestinationIP: ip4b, SourcePort: 1, DestinationPort: 2, VLANTCI: 0xfff5}
	b := make([]byte, f.HeaderLen()+8)
	r, err := BuildUDP(b, &f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseFrame(b)
	if err != nil || r != p {
		t.Fatalf("untagged with a TCI: built %+v, parsed %+v, %v", r, p, err)
	}
	f.VLANProto = EtherTypeIPv4
	c := make([]byte, f.HeaderLen()+8)
	if _, err := BuildUDP(c, &f); !errors.Is(err, ErrBadVLAN) {
		t.Fatalf("tag protocol 0x0800: %v, want ErrBadVLAN", err)
	}
	for _, x := range c {
		if x != 0 {
			t.Fatal("a refused build wrote the frame")
		}
	}
}

// TestIPv6TwoFragmentHeaders checks that a first fragment (M set) whose
// Fragment header is followed by an atomic one (offset and M zero) parses
// as a fragment, as the kernel and tshark take it, not as a whole UDP
// packet.
func TestIPv6TwoFragmentHeaders(t *testing.T) {
	p := make([]byte, 14+40+8+8+8+4)
	binary.BigEndian.PutUint16(p[12:14], EtherTypeIPv6)
	ip := p[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:6], 8+8+8+4)
	ip[6] = IPProtoFragment
	ip[7] = 64
	copy(ip[8:24], netip.MustParseAddr("2001:2::1").AsSlice())
	copy(ip[24:40], netip.MustParseAddr("2001:2::2").AsSlice())
	f1 := ip[40:48]
	f1[0] = IPProtoFragment
	binary.BigEndian.PutUint16(f1[2:4], 1) // offset 0, M
	f2 := ip[48:56]
	f2[0] = IPProtoUDP // offset 0, M clear: atomic
	u := ip[56:64]
	binary.BigEndian.PutUint16(u[0:2], 4000)
	binary.BigEndian.PutUint16(u[2:4], 9000)
	binary.BigEndian.PutUint16(u[4:6], 12)
	var f Frame
	err := ParseFrameInto(p, &f)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Fragment {
		t.Errorf("parsed %+v: not a fragment", f)
	}
}
