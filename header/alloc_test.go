package header

import (
	"errors"
	"testing"
)

// TestZeroAllocs asserts that parsing (good and bad input), building,
// reading fields and checksumming allocate nothing.
func TestZeroAllocs(t *testing.T) {
	udp4 := udpFrame(t, udp4Frame(), 1472)
	tcp6 := tcpFrame(true, 100)
	bad := udpFrame(t, udp4Frame(), 10)
	IPv4(bad[14:]).SetTotalLen(2000)
	arp := arpFrame()
	out := make([]byte, 1514)
	f4 := udp4Frame()
	f6 := udp6Frame()
	f6.VLANProto, f6.VLANTCI = EtherTypeVLAN, 7
	var sink uint64

	tests := []struct {
		name string
		fn   func()
	}{
		{"ParseFrame udp4", func() {
			f, err := ParseFrame(udp4)
			if err != nil || f.VerifyChecksum(udp4) != nil {
				panic("parse")
			}
		}},
		{"ParseFrame tcp6", func() {
			f, err := ParseFrame(tcp6)
			if err != nil || f.VerifyChecksum(tcp6) != nil {
				panic("parse")
			}
		}},
		{"ParseFrame arp", func() {
			if _, err := ParseFrame(arp); err != nil {
				panic("parse")
			}
		}},
		{"ParseFrame error", func() {
			_, err := ParseFrame(bad)
			if !errors.Is(err, ErrTruncated) {
				panic("no error")
			}
			// (errors.As would allocate its target, not this package.)
			if pe, ok := err.(*ParseError); !ok || pe.Layer != "ipv4" {
				panic("not a ParseError")
			}
		}},
		{"ParsePacket", func() {
			if _, err := ParsePacket(tcp6[14:]); err != nil {
				panic("parse")
			}
		}},
		{"views", func() {
			ip := IPv4(udp4[14:])
			u := UDP(udp4[34:])
			e := Ethernet(udp4)
			src, dst := ip.Source(), ip.Destination()
			ip6 := IPv6(tcp6[14:])
			s6 := ip6.Source()
			tcp := TCP(tcp6[54:])
			o, err := tcp.ParseOptions()
			if !src.IsValid() || !dst.IsValid() || !s6.IsValid() || err != nil {
				panic("views")
			}
			sink += uint64(u.SourcePort()) + uint64(e.Source()[5]) + uint64(o.MSS) + uint64(ip.TTL())
			_, _, _, err = ip6.SkipExtensionHeaders()
			if err != nil {
				panic(err)
			}
		}},
		{"BuildUDP v4", func() {
			if _, err := BuildUDP(out, f4); err != nil {
				panic(err)
			}
		}},
		{"BuildUDP v6 vlan", func() {
			if _, err := BuildUDP(out, f6); err != nil {
				panic(err)
			}
		}},
		{"BuildUDP error", func() {
			if _, err := BuildUDP(out[:10], f4); err == nil {
				panic("no error")
			}
		}},
		{"Encode", func() {
			Ethernet(out).Encode(&EthernetFields{Source: mac1, Destination: mac2, EtherType: EtherTypeIPv4})
			IPv4(out[14:]).Encode(&IPv4Fields{TotalLen: 100, TTL: 1, Protocol: IPProtoTCP, Source: ip4a, Destination: ip4b, Options: []byte{1, 1, 1, 1}})
			TCP(out[38:]).Encode(&TCPFields{Seq: 1, Options: []byte{2, 4, 5, 0xb4}})
			IPv6(out[14:]).Encode(&IPv6Fields{Source: ip6a, Destination: ip6b})
			IPv6Fragment(out[54:]).Encode(&IPv6FragmentFields{NextHeader: IPProtoUDP, FragmentOffset: 1448, MoreFragments: true, ID: 9})
			UDP(out[54:]).Encode(&UDPFields{Length: 8})
			ICMPv4(out[54:]).Encode(&ICMPv4Fields{Type: 8})
			ICMPv6(out[54:]).Encode(&ICMPv6Fields{Type: 128})
			VLAN(out[14:]).Encode(&VLANFields{ID: 1})
			ARP(out[14:]).Encode(&ARPFields{SenderHardwareAddr: mac1[:], TargetHardwareAddr: mac2[:], SenderProtocolAddr: out[0:4], TargetProtocolAddr: out[4:8]})
			IPv4(udp4[14:]).DecTTL()
		}},
		{"IPv6 extension headers", func() {
			opts := []byte{IPv6OptionRouterAlert, 2, 0, 0}
			IPv6Options(out).Encode(&IPv6OptionsFields{NextHeader: IPProtoRouting, Options: opts})
			IPv6Routing(out[8:]).Encode(&IPv6RoutingFields{NextHeader: IPProtoUDP, RoutingType: IPv6RoutingSegments, Data: opts})
			h, err := ParseIPv6Options(out)
			if err != nil {
				panic(err)
			}
			it := NewIPv6OptionIterator(h.Options())
			for {
				typ, _, ok := it.Next()
				if !ok {
					break
				}
				sink += uint64(typ)
			}
			r, err := ParseIPv6Routing(out[8:])
			if err != nil || it.Err() != nil {
				panic("extension headers")
			}
			sink += uint64(r.SegmentsLeft()) + uint64(len(r.Data()))
			if _, err := ParseIPv6Routing(out[:1]); err == nil {
				panic("no error")
			}
		}},
		{"NDP", func() {
			f := NDPFields{Type: ICMPv6NeighborAdvert, Flags: NDPFlagSolicited, Target: ip6a, Options: []byte{NDPOptionTargetLinkAddr, 1, 2, 0, 0, 0, 0, 1}}
			NDP(out).Encode(&f)
			h, err := ParseNDP(out[:f.Len()])
			if err != nil {
				panic(err)
			}
			it := NewNDPOptionIterator(h.Options())
			for {
				_, data, ok := it.Next()
				if !ok {
					break
				}
				mac, _ := NDPLinkAddr(data)
				sink += uint64(mac[5])
			}
			if !h.Target().IsValid() || it.Err() != nil {
				panic("ndp")
			}
			if _, err := ParseNDP(out[:3]); err == nil {
				panic("no error")
			}
		}},
		{"checksums", func() {
			sink += uint64(Checksum(udp4, 0))
			sink += uint64(ChecksumUpdate32(1, 2, 3) + ChecksumUpdate16(1, 2, 3) + ChecksumUpdateBytes(1, udp4[:16], tcp6[:16]))
			sink += uint64(PseudoHeaderChecksumIPv4(ip4a.As4(), ip4b.As4(), 17, 100) + PseudoHeaderChecksumIPv6(ip6a.As16(), ip6b.As16(), 6, 100))
			if err := FinishChecksum(udp4, 34, 6); err != nil {
				panic(err)
			}
			if err := FinishChecksum(udp4, 34, 9999); err == nil {
				panic("no error")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tt.fn); n != 0 {
				t.Fatalf("%v allocations per run, want 0", n)
			}
		})
	}
	_ = sink
}
