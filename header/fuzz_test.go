package header

// Fuzz targets, one per parser. Each checks that bytes from the wire never
// cause a panic, that what a parser accepts respects its length fields,
// that reading fields and encoding them again reproduces the header, and
// that gopacket agrees where it decodes without error. gopacket is lenient
// or strict in a few places where this package follows the kernel; each
// such difference is named where it is skipped.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// feedback records gopacket's truncation reports.
type feedback struct{ truncated bool }

func (f *feedback) SetTruncated() { f.truncated = true }

// checkParseErr fails unless err is one of this package's *ParseError
// values wrapping a sentinel.
func checkParseErr(t *testing.T, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	for _, s := range []error{ErrTruncated, ErrBadVersion, ErrBadIHL, ErrBadLength, ErrBadDataOffset, ErrBadOption, ErrBadExtensionHeader} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v wraps no parse sentinel", err)
}

// seedFrames adds gopacket's packets, cut at the given layer, to f.
func seedFrames(f *testing.F, cut func(b []byte, fr Frame) []byte) {
	for _, b := range gpPackets(f) {
		fr, err := ParseFrame(b)
		if err != nil {
			f.Fatal(err)
		}
		if s := cut(b, fr); s != nil {
			f.Add(s)
			if len(s) > 1 {
				f.Add(s[:len(s)-1])
			}
		}
	}
}

func network(b []byte, fr Frame) []byte { return b[fr.NetworkOffset:] }

func transport(b []byte, fr Frame) []byte {
	if fr.TransportOffset == 0 {
		return nil
	}
	return b[fr.TransportOffset:fr.End]
}

func FuzzEthernet(f *testing.F) {
	seedFrames(f, func(b []byte, _ Frame) []byte { return b })
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseEthernet(b)
		var g layers.Ethernet
		gerr := g.DecodeFromBytes(b, &feedback{})
		if err != nil {
			checkParseErr(t, err)
			if gerr == nil {
				t.Fatalf("we reject (%v), gopacket accepts", err)
			}
			return
		}
		if gerr != nil {
			t.Fatalf("we accept, gopacket: %v", gerr)
		}
		if len(h) != len(b) || len(h.Payload()) != len(b)-EthernetHeaderLen {
			t.Fatal("bounds")
		}
		if !bytes.Equal(g.SrcMAC, h.Source().asSlice()) || !bytes.Equal(g.DstMAC, h.Destination().asSlice()) {
			t.Fatal("addresses differ from gopacket's")
		}
		// gopacket reports an 802.3 length as EthernetTypeLLC.
		if h.EtherType() >= EtherTypeMin && uint16(g.EthernetType) != h.EtherType() {
			t.Fatalf("ethertype %#x, gopacket %#x", h.EtherType(), g.EthernetType)
		}
		c := make([]byte, EthernetHeaderLen)
		Ethernet(c).Encode(&EthernetFields{Destination: h.Destination(), Source: h.Source(), EtherType: h.EtherType()})
		if !bytes.Equal(c, b[:EthernetHeaderLen]) {
			t.Fatal("round trip")
		}
	})
}

func FuzzVLAN(f *testing.F) {
	seedFrames(f, func(b []byte, fr Frame) []byte { return b[EthernetHeaderLen:] })
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseVLAN(b)
		var g layers.Dot1Q
		gerr := g.DecodeFromBytes(b, &feedback{})
		if err != nil {
			checkParseErr(t, err)
			if gerr == nil {
				t.Fatalf("we reject (%v), gopacket accepts", err)
			}
			return
		}
		if gerr != nil {
			t.Fatalf("we accept, gopacket: %v", gerr)
		}
		if h.Priority() != g.Priority || h.DropEligible() != g.DropEligible || h.ID() != g.VLANIdentifier || h.EtherType() != uint16(g.Type) {
			t.Fatal("differs from gopacket")
		}
		c := make([]byte, VLANTagLen)
		VLAN(c).Encode(&VLANFields{Priority: h.Priority(), DropEligible: h.DropEligible(), ID: h.ID(), EtherType: h.EtherType()})
		if !bytes.Equal(c, b[:VLANTagLen]) {
			t.Fatal("round trip")
		}
	})
}

func FuzzARP(f *testing.F) {
	seedFrames(f, func(b []byte, fr Frame) []byte {
		if fr.EtherType != EtherTypeARP {
			return nil
		}
		return network(b, fr)
	})
	f.Add([]byte{0, 1, 8, 0, 200, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseARP(b)
		if err == nil {
			if len(h) != ARPHeaderLen+2*h.HardwareLen()+2*h.ProtocolLen() || len(h) > len(b) {
				t.Fatal("bounds")
			}
			_ = h.TargetProtocolAddr()
			c := make([]byte, len(h))
			ARP(c).Encode(&ARPFields{HardwareType: h.HardwareType(), ProtocolType: h.ProtocolType(), Op: h.Op(),
				SenderHardwareAddr: h.SenderHardwareAddr(), SenderProtocolAddr: h.SenderProtocolAddr(),
				TargetHardwareAddr: h.TargetHardwareAddr(), TargetProtocolAddr: h.TargetProtocolAddr()})
			if !bytes.Equal(c, h) {
				t.Fatal("round trip")
			}
		} else {
			checkParseErr(t, err)
		}
		// Deliberate difference: gopacket adds the address lengths in
		// uint8 arithmetic, which wraps (and can panic) when 8+2h+2p
		// exceeds 255. Compare only below that.
		if len(b) < ARPHeaderLen || ARPHeaderLen+2*int(b[4])+2*int(b[5]) > 255 {
			return
		}
		var g layers.ARP
		gerr := g.DecodeFromBytes(b, &feedback{})
		if (err == nil) != (gerr == nil) {
			t.Fatalf("ours %v, gopacket %v", err, gerr)
		}
		if err != nil {
			return
		}
		// gopacket keeps only the low byte of the hardware type (its
		// LinkType is a uint8).
		if uint8(h.HardwareType()) != uint8(g.AddrType) || h.ProtocolType() != uint16(g.Protocol) || h.Op() != g.Operation ||
			!bytes.Equal(h.SenderHardwareAddr(), g.SourceHwAddress) || !bytes.Equal(h.SenderProtocolAddr(), g.SourceProtAddress) ||
			!bytes.Equal(h.TargetHardwareAddr(), g.DstHwAddress) || !bytes.Equal(h.TargetProtocolAddr(), g.DstProtAddress) {
			t.Fatal("differs from gopacket")
		}
	})
}

// hasShortIPv4Option reports an option of length 2 (kind, length, no
// data), which RFC 791 and the kernel allow and gopacket rejects.
func hasShortIPv4Option(opts []byte) bool {
	for len(opts) > 0 {
		switch opts[0] {
		case IPv4OptionEnd:
			return false
		case IPv4OptionNOP:
			opts = opts[1:]
			continue
		}
		if opts[1] == 2 {
			return true
		}
		opts = opts[opts[1]:]
	}
	return false
}

func FuzzIPv4(f *testing.F) {
	seedFrames(f, func(b []byte, fr Frame) []byte {
		if fr.EtherType != EtherTypeIPv4 {
			return nil
		}
		return network(b, fr)
	})
	f.Add(ipv4Bytes(24, []byte{0x44, 2, 1, 0}))
	f.Add(ipv4Bytes(28, []byte{0x44, 0, 0, 0, 0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseIPv4(b)
		var g layers.IPv4
		var fb feedback
		gerr := g.DecodeFromBytes(b, &fb)
		if err != nil {
			checkParseErr(t, err)
			// Deliberate differences where gopacket accepts: it does not
			// check the version, and it reads a Total Length of 0 as "the
			// rest of the bytes" (TSO captures on Windows).
			if gerr == nil && !fb.truncated && b[0]>>4 == IPv4Version && binary.BigEndian.Uint16(b[2:4]) != 0 {
				t.Fatalf("we reject (%v), gopacket accepts", err)
			}
			return
		}
		hl := h.HeaderLen()
		if hl < IPv4MinHeaderLen || hl > IPv4MaxHeaderLen || int(h.TotalLen()) != len(h) || hl > len(h) || len(h) > len(b) {
			t.Fatalf("bounds: hl %d total %d len %d", hl, h.TotalLen(), len(b))
		}
		if len(h.Payload()) != len(h)-hl || len(h.Options()) != hl-IPv4MinHeaderLen {
			t.Fatal("payload or options bounds")
		}
		if !optionsValid(h.Options()) {
			t.Fatal("accepted malformed options")
		}
		// Round trip: the fields encode back to the same header.
		c := make([]byte, hl)
		IPv4(c).Encode(&IPv4Fields{TOS: h.TOS(), TotalLen: h.TotalLen(), ID: h.ID(), Flags: h.Flags(), FragmentOffset: h.FragmentOffset(),
			TTL: h.TTL(), Protocol: h.Protocol(), Source: h.Source(), Destination: h.Destination(), Options: h.Options()})
		if !IPv4(c).ChecksumValid() {
			t.Fatal("encoded checksum invalid")
		}
		if !bytes.Equal(c[:10], h[:10]) || !bytes.Equal(c[12:], h[12:hl]) {
			t.Fatalf("round trip:\n% x\n% x", c, h[:hl])
		}
		if h.ChecksumValid() {
			if !sameOnesComplement(h.Checksum(), IPv4(c).Checksum()) {
				t.Fatal("valid checksum recomputes differently")
			}
			d := append([]byte(nil), h...)
			IPv4(d).DecTTL()
			if !IPv4(d).ChecksumValid() {
				t.Fatal("DecTTL broke the checksum")
			}
		}
		// Deliberate difference: an option of length 2 (RFC 791 and the
		// kernel accept it; gopacket wants more than 2).
		if gerr != nil {
			if hasShortIPv4Option(h.Options()) {
				return
			}
			t.Fatalf("we accept, gopacket: %v", gerr)
		}
		compareIPv4(t, h, &g)
	})
}

func FuzzIPv6(f *testing.F) {
	seedFrames(f, func(b []byte, fr Frame) []byte {
		if fr.EtherType != EtherTypeIPv6 {
			return nil
		}
		return network(b, fr)
	})
	f.Add(ipv6WithExt(IPProtoHopByHop, []byte{IPProtoFragment, 0, 1, 4, 0, 0, 0, 0, IPProtoUDP, 0, 0, 8, 0, 0, 0, 1}, 8))
	f.Add(ipv6WithExt(IPProtoAH, []byte{IPProtoTCP, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 20))
	f.Add(ipv6WithExt(IPProtoRouting, append([]byte{IPProtoUDP, 2, IPv6RoutingRPL, 1, 0x88, 0x10, 0, 0}, make([]byte, 16)...), 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= IPv6HeaderLen {
			// Any bytes at all, whatever the Routing header claims:
			// reads stay within b and the Payload Length.
			_ = IPv6(b).FinalDestination()
			_ = IPv6(b).PseudoHeaderChecksum(IPProtoUDP, 8)
		}
		h, err := ParseIPv6(b)
		var g layers.IPv6
		var fb feedback
		gerr := g.DecodeFromBytes(b, &fb)
		if err != nil {
			checkParseErr(t, err)
			// gopacket does not check the version.
			if gerr == nil && !fb.truncated && b[0]>>4 == IPv6Version {
				t.Fatalf("we reject (%v), gopacket accepts", err)
			}
			return
		}
		if len(h) != IPv6HeaderLen+int(h.PayloadLen()) || len(h) > len(b) || len(h.Payload()) != int(h.PayloadLen()) {
			t.Fatal("bounds")
		}
		proto, off, frag, xerr := h.SkipExtensionHeaders()
		if xerr != nil {
			checkParseErr(t, xerr)
		} else {
			if off < IPv6HeaderLen || off > len(h) {
				t.Fatalf("transport offset %d outside %d bytes", off, len(h))
			}
			if frag != nil && (len(frag) != IPv6FragmentHeaderLen || &frag[0] == &h[0]) {
				t.Fatal("fragment view")
			}
			if frag != nil && frag.FragmentOffset() != 0 && proto != frag.NextHeader() {
				t.Fatal("non-first fragment: protocol is not the fragment's next header")
			}
		}
		c := make([]byte, IPv6HeaderLen)
		IPv6(c).Encode(&IPv6Fields{TrafficClass: h.TrafficClass(), FlowLabel: h.FlowLabel(), PayloadLen: h.PayloadLen(),
			NextHeader: h.NextHeader(), HopLimit: h.HopLimit(), Source: h.Source(), Destination: h.Destination()})
		if !bytes.Equal(c, h[:IPv6HeaderLen]) {
			t.Fatal("round trip")
		}
		// Deliberate differences: gopacket rejects a Payload Length of 0
		// (which it reserves for jumbograms, unsupported here), and parses
		// the Hop-by-Hop options inside the IPv6 layer, where this
		// package only steps over them.
		if h.PayloadLen() == 0 || h.NextHeader() == IPProtoHopByHop {
			if gerr == nil {
				compareIPv6(t, h, &g)
			}
			return
		}
		if gerr != nil {
			t.Fatalf("we accept, gopacket: %v", gerr)
		}
		compareIPv6(t, h, &g)
	})
}

// FuzzIPv6Fragment parses arbitrary bytes as a Fragment header: no panic,
// a *ParseError for fewer than 8 bytes, and otherwise a view of the first
// 8 whose fields Encode writes back as they were (the reserved fields
// zero), as gopacket reads them.
func FuzzIPv6Fragment(f *testing.F) {
	f.Add([]byte{IPProtoUDP, 0, 0x05, 0xa9, 1, 2, 3, 4})
	f.Add([]byte{IPProtoTCP, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 9})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseIPv6Fragment(b)
		if err != nil {
			checkParseErr(t, err)
			if len(b) >= IPv6FragmentHeaderLen {
				t.Fatalf("%d bytes refused: %v", len(b), err)
			}
			return
		}
		if len(h) != IPv6FragmentHeaderLen || &h[0] != &b[0] {
			t.Fatal("bounds")
		}
		c := make([]byte, IPv6FragmentHeaderLen)
		IPv6Fragment(c).Encode(&IPv6FragmentFields{NextHeader: h.NextHeader(), FragmentOffset: h.FragmentOffset(), MoreFragments: h.MoreFragments(), ID: h.ID()})
		want := bytes.Clone(b[:IPv6FragmentHeaderLen])
		want[1], want[3] = 0, want[3]&^6 // the reserved fields
		if !bytes.Equal(c, want) {
			t.Fatalf("Encode wrote % x for % x", c, b[:IPv6FragmentHeaderLen])
		}
		pkt := gopacket.NewPacket(b[:IPv6FragmentHeaderLen], layers.LayerTypeIPv6Fragment, gopacket.Default)
		if g, ok := pkt.Layer(layers.LayerTypeIPv6Fragment).(*layers.IPv6Fragment); ok &&
			(uint8(g.NextHeader) != h.NextHeader() || g.FragmentOffset*8 != h.FragmentOffset() || g.MoreFragments != h.MoreFragments() || g.Identification != h.ID()) {
			t.Fatalf("gopacket reads %+v from % x", g, b[:IPv6FragmentHeaderLen])
		}
	})
}

func FuzzUDP(f *testing.F) {
	seedFrames(f, func(b []byte, fr Frame) []byte {
		if fr.Protocol != IPProtoUDP {
			return nil
		}
		return transport(b, fr)
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseUDP(b)
		var g layers.UDP
		var fb feedback
		gerr := g.DecodeFromBytes(b, &fb)
		if err != nil {
			checkParseErr(t, err)
			// gopacket reads a Length of 0 as a jumbogram (RFC 2675),
			// unsupported here.
			if gerr == nil && !fb.truncated && binary.BigEndian.Uint16(b[4:6]) != 0 {
				t.Fatalf("we reject (%v), gopacket accepts", err)
			}
			return
		}
		if int(h.Length()) != len(h) || len(h) < UDPHeaderLen || len(h) > len(b) || len(h.Payload()) != len(h)-UDPHeaderLen {
			t.Fatal("bounds")
		}
		if gerr != nil || fb.truncated {
			t.Fatalf("we accept, gopacket: %v (truncated %v)", gerr, fb.truncated)
		}
		compareUDP(t, h, &g)
		c := make([]byte, len(h))
		copy(c, h)
		UDP(c).Encode(&UDPFields{SourcePort: h.SourcePort(), DestinationPort: h.DestinationPort(), Length: h.Length(), Checksum: h.Checksum()})
		if !bytes.Equal(c, h) {
			t.Fatal("round trip")
		}
		pseudo := binary.BigEndian.Uint16(b[:2]) // any pseudo-header sum
		UDP(c).SetChecksum(UDP(c).ComputeChecksum(pseudo))
		if !UDP(c).ChecksumValid(pseudo) || UDP(c).Checksum() == 0 {
			t.Fatal("computed checksum does not verify")
		}
	})
}

func FuzzTCP(f *testing.F) {
	seedFrames(f, func(b []byte, fr Frame) []byte {
		if fr.Protocol != IPProtoTCP {
			return nil
		}
		return transport(b, fr)
	})
	f.Add(func() []byte {
		c := make([]byte, 28)
		TCP(c).Encode(&TCPFields{Options: []byte{2, 4, 5, 0xb4, 8, 10, 0}})
		return c
	}())
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseTCP(b)
		var g layers.TCP
		gerr := g.DecodeFromBytes(b, &feedback{})
		if err != nil {
			checkParseErr(t, err)
			if gerr == nil {
				t.Fatalf("we reject (%v), gopacket accepts", err)
			}
			return
		}
		hl := h.HeaderLen()
		if hl < TCPMinHeaderLen || hl > TCPMaxHeaderLen || hl > len(h) || len(h.Options()) != hl-TCPMinHeaderLen || len(h.Payload()) != len(h)-hl {
			t.Fatal("bounds")
		}
		_, oerr := h.ParseOptions()
		// ParseTCP keeps malformed options, as the kernel does; gopacket
		// rejects the segment. Its verdict must match ParseOptions'.
		if (oerr != nil) != (gerr != nil) {
			t.Fatalf("options: ours %v, gopacket %v", oerr, gerr)
		}
		if gerr == nil {
			compareTCP(t, h, &g)
		}
		c := make([]byte, len(h))
		copy(c, h)
		TCP(c).Encode(&TCPFields{SourcePort: h.SourcePort(), DestinationPort: h.DestinationPort(), Seq: h.Seq(), Ack: h.Ack(),
			Flags: h.Flags(), AE: h.AE(), Window: h.Window(), Checksum: h.Checksum(), Urgent: h.Urgent(), Options: h.Options()})
		c[12] |= h[12] & 0x0e // Encode clears the reserved bits
		if !bytes.Equal(c, h) {
			t.Fatal("round trip")
		}
		pseudo := binary.BigEndian.Uint16(b[4:6])
		TCP(c).SetChecksum(TCP(c).ComputeChecksum(pseudo))
		if !TCP(c).ChecksumValid(pseudo) {
			t.Fatal("computed checksum does not verify")
		}
	})
}

func FuzzICMP(f *testing.F) {
	seedFrames(f, func(b []byte, fr Frame) []byte {
		if fr.Protocol != IPProtoICMP && fr.Protocol != IPProtoICMPv6 {
			return nil
		}
		return transport(b, fr)
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		h4, err4 := ParseICMPv4(b)
		var g4 layers.ICMPv4
		gerr4 := g4.DecodeFromBytes(b, &feedback{})
		if (err4 == nil) != (gerr4 == nil) {
			t.Fatalf("icmpv4: ours %v, gopacket %v", err4, gerr4)
		}
		if err4 != nil {
			checkParseErr(t, err4)
		} else {
			compareICMPv4(t, h4, &g4)
			c := append([]byte(nil), h4...)
			ICMPv4(c).Encode(&ICMPv4Fields{Type: h4.Type(), Code: h4.Code(), Checksum: h4.Checksum(), Rest: h4.Rest()})
			if !bytes.Equal(c, h4) {
				t.Fatal("icmpv4 round trip")
			}
			ICMPv4(c).SetChecksum(ICMPv4(c).ComputeChecksum())
			if !ICMPv4(c).ChecksumValid() {
				t.Fatal("icmpv4 checksum")
			}
		}

		h6, err6 := ParseICMPv6(b)
		var g6 layers.ICMPv6
		gerr6 := g6.DecodeFromBytes(b, &feedback{})
		if err6 != nil {
			checkParseErr(t, err6)
			// Deliberate difference: gopacket takes 4 bytes, the kernel
			// (struct icmp6hdr) and this package 8.
			if gerr6 == nil && len(b) >= ICMPv6HeaderLen {
				t.Fatalf("icmpv6: we reject (%v), gopacket accepts", err6)
			}
			return
		}
		if gerr6 != nil {
			t.Fatalf("icmpv6: we accept, gopacket %v", gerr6)
		}
		compareICMPv6(t, h6, &g6)
		c := append([]byte(nil), h6...)
		ICMPv6(c).Encode(&ICMPv6Fields{Type: h6.Type(), Code: h6.Code(), Checksum: h6.Checksum(), Rest: h6.Rest()})
		if !bytes.Equal(c, h6) {
			t.Fatal("icmpv6 round trip")
		}
	})
}

// gpParseSafe is gpParse that survives a panic inside gopacket (its ARP
// decoder indexes with wrapped uint8 lengths); it returns nil then.
func gpParseSafe(b []byte) (g *gpDecoded) {
	defer func() {
		if recover() != nil {
			g = nil
		}
	}()
	return gpParse(b)
}

func FuzzParseFrame(f *testing.F) {
	seedFrames(f, func(b []byte, _ Frame) []byte { return b })
	for _, b := range [][]byte{
		udpFrame(f, &UDPFrame{VLANProto: EtherTypeQinQ, VLANTCI: 1, SourceIP: ip6a, DestinationIP: ip6b}, 3),
		ipv6Frame(ipv6WithExt(IPProtoHopByHop, []byte{IPProtoFragment, 0, 1, 4, 0, 0, 0, 0, IPProtoUDP, 0, 0, 8, 0, 0, 0, 1}, 8)),
		ipv6Frame(ipv6WithExt(IPProtoFragment, []byte{IPProtoTCP, 0, 0, 1, 0, 0, 0, 1}, 20)),
		// An Ethernet header announcing IPv4 and nothing after it.
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ParseFrame(b)
		checkFrame(t, b, fr, err, EthernetHeaderLen)
		// Into a Frame left over from another packet: the same result.
		into := Frame{NetworkOffset: 7, TransportOffset: 9, PayloadOffset: 11, End: 13, EtherType: 1, VLANProto: 2, VLANTCI: 3, Protocol: 4, Fragment: true}
		if ierr := ParseFrameInto(b, &into); into != fr || ierr != err {
			t.Fatalf("ParseFrameInto gave %+v, %v; ParseFrame %+v, %v", into, ierr, fr, err)
		}
		if err == nil {
			g := gpParseSafe(b)
			if g != nil && g.err == nil && !g.truncated {
				compareWithGopacketLoose(t, b, fr, g)
			}
			roundTripUDP(t, b, fr)
		}
		// Verifying never panics: not the Frame a failed parse left, not
		// over shorter bytes, not with a header field changed since.
		verifyAnyway(t, &fr, b)
		// The same bytes as a bare IP packet.
		pk, err := ParsePacket(b)
		checkFrame(t, b, pk, err, 0)
		verifyAnyway(t, &pk, b)
		// Only the first k bytes linear, as in a head-split buffer: the
		// same result, or the headers are reported beyond the linear data.
		for k := range min(len(b), 160) {
			checkSplit(t, b, k, fr, err0(ParseFrame(b)), parseFrameValue)
			checkSplit(t, b, k, pk, err0(ParsePacket(b)), parsePacket)
		}
	})
}

func err0(_ Frame, err error) error { return err }

// verifyAnyway calls VerifyChecksum on f over b, over b cut short, and
// over b with its bytes changed, whatever parse gave f: each may fail,
// none may panic.
func verifyAnyway(t *testing.T, f *Frame, b []byte) {
	t.Helper()
	f.VerifyChecksum(b)
	for _, k := range []int{0, len(b) / 2, max(0, len(b)-1)} {
		f.VerifyChecksum(b[:k])
	}
	c := slices.Clone(b)
	for i := range c {
		c[i] ^= 0xff
	}
	f.VerifyChecksum(c)
}

// parseFrameValue is parseFrame returning its Frame, as checkSplit calls it.
func parseFrameValue(b []byte, total int) (Frame, error) {
	var f Frame
	err := parseFrame(b, total, &f)
	return f, err
}

func checkSplit(t *testing.T, b []byte, k int, want Frame, wantErr error, parse func([]byte, int) (Frame, error)) {
	t.Helper()
	got, err := parse(b[:k], len(b))
	switch {
	case err == errLinear:
	case err != wantErr:
		t.Fatalf("linear %d of %d: err %v, contiguous %v", k, len(b), err, wantErr)
	case err == nil && got != want:
		t.Fatalf("linear %d of %d: %+v, contiguous %+v", k, len(b), got, want)
	}
}

func ipv6Frame(pkt []byte) []byte {
	b := make([]byte, EthernetHeaderLen, EthernetHeaderLen+len(pkt))
	Ethernet(b).Encode(&EthernetFields{Source: mac1, Destination: mac2, EtherType: EtherTypeIPv6})
	return append(b, pkt...)
}

// checkFrame checks a ParseFrame or ParsePacket result: an error of this
// package, or offsets in order inside b at which the views parse.
func checkFrame(t *testing.T, b []byte, fr Frame, err error, minNetwork int) {
	t.Helper()
	if err != nil {
		checkParseErr(t, err)
		return
	}
	if fr.NetworkOffset < minNetwork || fr.NetworkOffset > fr.End || fr.End > len(b) {
		t.Fatalf("offsets %+v in %d bytes", fr, len(b))
	}
	if fr.TransportOffset != 0 && (fr.TransportOffset <= fr.NetworkOffset || fr.TransportOffset > fr.End) {
		t.Fatalf("transport offset %+v", fr)
	}
	if fr.PayloadOffset != 0 && (fr.TransportOffset == 0 || fr.PayloadOffset <= fr.TransportOffset || fr.PayloadOffset > fr.End || fr.Fragment) {
		t.Fatalf("payload offset %+v", fr)
	}
	switch fr.EtherType {
	case EtherTypeIPv4:
		if _, err := ParseIPv4(b[fr.NetworkOffset:fr.End]); err != nil || fr.TransportOffset == 0 {
			t.Fatalf("ipv4 at %d: %v", fr.NetworkOffset, err)
		}
	case EtherTypeIPv6:
		if _, err := ParseIPv6(b[fr.NetworkOffset:fr.End]); err != nil || fr.TransportOffset == 0 {
			t.Fatalf("ipv6 at %d: %v", fr.NetworkOffset, err)
		}
	case EtherTypeARP:
		if a, err := ParseARP(b[fr.NetworkOffset:]); err != nil || fr.NetworkOffset+len(a) != fr.End {
			t.Fatalf("arp at %d: %v", fr.NetworkOffset, err)
		}
	}
	if fr.PayloadOffset != 0 {
		seg := b[fr.TransportOffset:fr.End]
		var perr error
		switch fr.Protocol {
		case IPProtoUDP:
			_, perr = ParseUDP(seg)
		case IPProtoTCP:
			_, perr = ParseTCP(seg)
		case IPProtoICMP:
			_, perr = ParseICMPv4(seg)
		case IPProtoICMPv6:
			_, perr = ParseICMPv6(seg)
		default:
			t.Fatalf("payload offset for protocol %d", fr.Protocol)
		}
		if perr != nil {
			t.Fatalf("transport: %v", perr)
		}
	}
	if err := fr.VerifyChecksum(b); err != nil && !errors.Is(err, ErrBadChecksum) {
		t.Fatalf("VerifyChecksum: %v", err)
	}
}

// compareWithGopacketLoose compares the layers both parsers reached.
// gopacket stops earlier than ParseFrame at IPv6 extension headers other
// than Hop-by-Hop and decodes ICMPv4 inside IPv6 and the other way round;
// only what both decoded is compared.
func compareWithGopacketLoose(t *testing.T, b []byte, fr Frame, g *gpDecoded) {
	t.Helper()
	if fr.PayloadOffset != 0 {
		has := map[uint8]bool{
			IPProtoUDP:    g.has(layers.LayerTypeUDP),
			IPProtoTCP:    g.has(layers.LayerTypeTCP),
			IPProtoICMP:   g.has(layers.LayerTypeICMPv4),
			IPProtoICMPv6: g.has(layers.LayerTypeICMPv6),
		}
		if !has[fr.Protocol] {
			fr.PayloadOffset = 0 // compare the network layer only
		}
	}
	compareWithGopacket(t, b, fr, g, false)
}

// roundTripUDP rebuilds a UDP frame that BuildUDP could have written with
// BuildUDP from the fields read, and compares the bytes.
func roundTripUDP(t *testing.T, b []byte, fr Frame) {
	if fr.Protocol != IPProtoUDP || fr.PayloadOffset == 0 || fr.End != len(b) || fr.VerifyChecksum(b) != nil {
		return
	}
	if fr.NetworkOffset != EthernetHeaderLen+map[bool]int{true: VLANTagLen}[fr.VLANProto != 0] {
		return // several tags
	}
	u := UDP(b[fr.TransportOffset:])
	if int(u.Length()) != fr.End-fr.TransportOffset || u.Checksum() == 0 {
		return
	}
	eth := Ethernet(b)
	f := UDPFrame{Source: eth.Source(), Destination: eth.Destination(), VLANProto: fr.VLANProto, VLANTCI: fr.VLANTCI,
		SourcePort: u.SourcePort(), DestinationPort: u.DestinationPort()}
	switch fr.EtherType {
	case EtherTypeIPv4:
		ip := IPv4(b[fr.NetworkOffset:])
		if ip.HeaderLen() != IPv4MinHeaderLen || ip.Flags()&^IPv4FlagDontFragment != 0 || ip.TTL() == 0 {
			return
		}
		f.SourceIP, f.DestinationIP, f.TOS, f.TTL, f.ID, f.DontFragment = ip.Source(), ip.Destination(), ip.TOS(), ip.TTL(), ip.ID(), ip.Flags() != 0
	case EtherTypeIPv6:
		ip := IPv6(b[fr.NetworkOffset:])
		if ip.NextHeader() != IPProtoUDP || ip.HopLimit() == 0 {
			return
		}
		f.SourceIP, f.DestinationIP, f.TOS, f.TTL, f.FlowLabel = ip.Source(), ip.Destination(), ip.TrafficClass(), ip.HopLimit(), ip.FlowLabel()
	}
	c := append([]byte(nil), b...)
	got, err := BuildUDP(c, &f)
	if err != nil {
		t.Fatalf("BuildUDP: %v", err)
	}
	if got != fr {
		t.Fatalf("BuildUDP offsets %+v, ParseFrame %+v", got, fr)
	}
	// Both checksums verify; a valid field may be 0 or 0xffff for the same
	// sum, so compare them as ones' complement numbers.
	for _, at := range []int{fr.TransportOffset + 6, fr.NetworkOffset + 10} {
		if fr.EtherType == EtherTypeIPv6 && at == fr.NetworkOffset+10 {
			continue
		}
		if sameOnesComplement(binary.BigEndian.Uint16(b[at:]), binary.BigEndian.Uint16(c[at:])) {
			copy(c[at:at+2], b[at:at+2])
		}
	}
	if !bytes.Equal(c, b) {
		t.Fatalf("BuildUDP round trip:\n% x\n% x", b, c)
	}
}

func FuzzChecksum(f *testing.F) {
	for _, b := range gpPackets(f) {
		f.Add(b, 13, 14, 6)
	}
	f.Add([]byte{0xff, 0xff, 0, 0, 0xff}, 1, 0, 0)
	f.Fuzz(func(t *testing.T, b []byte, split, start, off int) {
		if got, want := Checksum(b, 0), checksumRef(b, 0); got != want {
			t.Fatalf("Checksum %#04x, reference %#04x", got, want)
		}
		if split >= 0 && split <= len(b) {
			s := ChecksumBlockAdd(Checksum(b[:split], 0), Checksum(b[split:], 0), split)
			if s != Checksum(b, 0) {
				t.Fatalf("chained at %d: %#04x", split, s)
			}
		}
		c := append([]byte(nil), b...)
		if err := FinishChecksum(c, start, off); err != nil {
			if !errors.Is(err, ErrBadChecksumOffset) || !bytes.Equal(c, b) {
				t.Fatalf("FinishChecksum failed with %v and changed b", err)
			}
			return
		}
		// The field held the pseudo-header sum v, which the receiver adds
		// again: the region plus v must sum to 0xffff. (The field's
		// position parity matters; real offsets are even.)
		if v := binary.BigEndian.Uint16(b[start+off:]); off%2 == 0 && ChecksumCombine(Checksum(c[start:], 0), v) != 0xffff {
			t.Fatal("finished checksum does not verify")
		}
	})
}

// TestVerifyHugeOffsets checks that VerifyChecksum refuses, without
// panicking, a Frame whose offsets are near the top of an int (set by hand,
// not by a parse): the bounds are not overflowed.
func TestVerifyHugeOffsets(t *testing.T) {
	b := udpFrame(t, &UDPFrame{SourceIP: ip4a, DestinationIP: ip4b}, 8)
	fr, err := ParseFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	huge := math.MaxInt - 3
	for name, f := range map[string]Frame{
		"network": {EtherType: EtherTypeIPv4, NetworkOffset: huge},
		"ipv6":    {EtherType: EtherTypeIPv6, NetworkOffset: huge},
		"transport": func() Frame {
			g := fr
			g.TransportOffset = huge
			return g
		}(),
		"end": func() Frame {
			g := fr
			g.End = huge
			return g
		}(),
	} {
		if err := f.VerifyChecksum(b); !errors.Is(err, ErrTruncated) {
			t.Errorf("%s offset near MaxInt: %v, want ErrTruncated", name, err)
		}
	}
}
