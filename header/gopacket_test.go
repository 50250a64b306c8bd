package header

// Agreement with an independent parser and serializer: packets built by
// github.com/google/gopacket/layers are read with this package's views, and
// packets built here are decoded by gopacket.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

var gpOpts = gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}

func gpSerialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gpOpts, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// gpDecoded holds the layers gopacket decoded from one frame. A
// DecodingLayerParser limited to the layers this package knows stops
// quietly at anything else (such as an application protocol gopacket would
// guess from a UDP port).
type gpDecoded struct {
	eth     layers.Ethernet
	dot1q   layers.Dot1Q // the innermost tag when there are several
	arp     layers.ARP
	ip4     layers.IPv4
	ip6     layers.IPv6
	udp     layers.UDP
	tcp     layers.TCP
	icmp4   layers.ICMPv4
	icmp6   layers.ICMPv6
	echo6   layers.ICMPv6Echo
	payload gopacket.Payload

	decoded   []gopacket.LayerType
	truncated bool
	err       error
}

func gpParse(b []byte) *gpDecoded {
	g := new(gpDecoded)
	p := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &g.eth, &g.dot1q, &g.arp, &g.ip4, &g.ip6,
		&g.udp, &g.tcp, &g.icmp4, &g.icmp6, &g.echo6, &g.payload)
	p.IgnoreUnsupported = true
	g.err = p.DecodeLayers(b, &g.decoded)
	g.truncated = p.Truncated
	return g
}

func (g *gpDecoded) has(lt gopacket.LayerType) bool { return g.count(lt) > 0 }

// count returns how often lt was decoded. The parser reuses one value per
// layer type, so a tunnel (IPv4 in IPv4) leaves only the inner header.
func (g *gpDecoded) count(lt gopacket.LayerType) int {
	n := 0
	for _, d := range g.decoded {
		if d == lt {
			n++
		}
	}
	return n
}

// gpDecode decodes b with gopacket and fails the test on any error.
func gpDecode(t testing.TB, b []byte) *gpDecoded {
	t.Helper()
	g := gpParse(b)
	if g.err != nil || g.truncated {
		t.Fatalf("gopacket: %v (truncated %v)", g.err, g.truncated)
	}
	return g
}

func addr(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a
}

// gpUDPChecksumEqual compares our UDP checksum with gopacket's, which
// writes a computed 0 as 0 where RFC 768 (and the kernel) send 0xffff.
func gpUDPChecksumEqual(ours, gp uint16) bool {
	return ours == gp || (gp == 0 && ours == 0xffff)
}

// gpPackets are real packets built by gopacket, the seeds of the fuzz
// targets. Each is a whole Ethernet frame.
func gpPackets(t testing.TB) map[string][]byte {
	eth := func(et layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: net.HardwareAddr(mac1[:]), DstMAC: net.HardwareAddr(mac2[:]), EthernetType: et}
	}
	ip4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, TOS: 0x28, Id: 0x4242, Flags: layers.IPv4DontFragment, TTL: 64, Protocol: p,
			SrcIP: ip4a.AsSlice(), DstIP: ip4b.AsSlice()}
	}
	ip6 := func(p layers.IPProtocol) *layers.IPv6 {
		return &layers.IPv6{Version: 6, TrafficClass: 0x28, FlowLabel: 0x12345, NextHeader: p, HopLimit: 64,
			SrcIP: ip6a.AsSlice(), DstIP: ip6b.AsSlice()}
	}
	pkts := map[string][]byte{}

	{
		ip := ip4(layers.IPProtocolUDP)
		u := &layers.UDP{SrcPort: 40000, DstPort: 40001}
		u.SetNetworkLayerForChecksum(ip)
		pkts["udp4"] = gpSerialize(t, eth(layers.EthernetTypeIPv4), ip, u, gopacket.Payload("hello, udp over ipv4"))
	}
	{
		ip := ip4(layers.IPProtocolUDP)
		ip.Options = []layers.IPv4Option{{OptionType: 0x94, OptionLength: 4, OptionData: []byte{0, 0}}, {OptionType: 1}}
		u := &layers.UDP{SrcPort: 1, DstPort: 2}
		u.SetNetworkLayerForChecksum(ip)
		pkts["udp4 options vlan"] = gpSerialize(t, eth(layers.EthernetTypeDot1Q),
			&layers.Dot1Q{Priority: 5, DropEligible: true, VLANIdentifier: 100, Type: layers.EthernetTypeIPv4},
			ip, u, gopacket.Payload("x"))
	}
	{
		ip := ip6(layers.IPProtocolUDP)
		u := &layers.UDP{SrcPort: 40002, DstPort: 40003}
		u.SetNetworkLayerForChecksum(ip)
		pkts["udp6"] = gpSerialize(t, eth(layers.EthernetTypeIPv6), ip, u, gopacket.Payload(bytes.Repeat([]byte{0xa5}, 101)))
	}
	{
		ip := ip4(layers.IPProtocolTCP)
		tcp := &layers.TCP{SrcPort: 443, DstPort: 50000, Seq: 0x01020304, Ack: 0x0a0b0c0d, SYN: true, ACK: true, Window: 64240,
			Options: []layers.TCPOption{
				{OptionType: layers.TCPOptionKindMSS, OptionData: []byte{0x05, 0xb4}},
				{OptionType: layers.TCPOptionKindSACKPermitted},
				{OptionType: layers.TCPOptionKindTimestamps, OptionData: []byte{0, 0, 1, 0, 0, 0, 2, 0}},
				{OptionType: layers.TCPOptionKindNop},
				{OptionType: layers.TCPOptionKindWindowScale, OptionData: []byte{7}},
			}}
		tcp.SetNetworkLayerForChecksum(ip)
		pkts["tcp4 syn"] = gpSerialize(t, eth(layers.EthernetTypeIPv4), ip, tcp)
	}
	{
		ip := ip6(layers.IPProtocolTCP)
		tcp := &layers.TCP{SrcPort: 22, DstPort: 60000, Seq: 7, Ack: 9, PSH: true, ACK: true, Window: 512, Urgent: 0}
		tcp.SetNetworkLayerForChecksum(ip)
		pkts["tcp6"] = gpSerialize(t, eth(layers.EthernetTypeIPv6), ip, tcp, gopacket.Payload("SSH-2.0-x\r\n"))
	}
	pkts["icmp4 echo"] = gpSerialize(t, eth(layers.EthernetTypeIPv4), ip4(layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 0x1d, Seq: 3},
		gopacket.Payload("abcdefghijklmnopqrstuvwabcdefghi"))
	{
		ip := ip6(layers.IPProtocolICMPv6)
		m := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
		m.SetNetworkLayerForChecksum(ip)
		pkts["icmp6 echo"] = gpSerialize(t, eth(layers.EthernetTypeIPv6), ip, m,
			&layers.ICMPv6Echo{Identifier: 0x77, SeqNumber: 1}, gopacket.Payload("ping6"))
	}
	pkts["arp"] = gpSerialize(t, &layers.Ethernet{SrcMAC: net.HardwareAddr(mac1[:]), DstMAC: net.HardwareAddr(BroadcastMAC[:]), EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: mac1[:], SourceProtAddress: ip4a.AsSlice(),
			DstHwAddress: make([]byte, 6), DstProtAddress: ip4b.AsSlice()},
		gopacket.Payload(make([]byte, 18))) // Ethernet padding to 60 bytes
	return pkts
}

// TestGopacketBuiltReadHere reads gopacket's packets with the views and
// compares every field and checksum.
func TestGopacketBuiltReadHere(t *testing.T) {
	for name, b := range gpPackets(t) {
		t.Run(name, func(t *testing.T) {
			p := gpDecode(t, b)
			f, err := ParseFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.VerifyChecksum(b); err != nil {
				t.Fatalf("VerifyChecksum: %v", err)
			}
			compareWithGopacket(t, b, f, p, true)
		})
	}
}

// compareWithGopacket checks that every layer gopacket decoded from b reads
// the same through the views at the offsets f gives. When gopacket built b
// (built), the checksum fields hold gopacket's own checksums, and ours must
// compute the same.
func compareWithGopacket(t testing.TB, b []byte, f Frame, g *gpDecoded, built bool) {
	t.Helper()
	// Decoded once: gopacket decodes an inner frame (EtherType 0x6558,
	// bridged Ethernet) into the same layer.
	if l := &g.eth; g.count(layers.LayerTypeEthernet) == 1 {
		h := Ethernet(b)
		if !bytes.Equal(l.SrcMAC, h.Source().asSlice()) || !bytes.Equal(l.DstMAC, h.Destination().asSlice()) {
			t.Errorf("ethernet addresses")
		}
		if h.EtherType() >= EtherTypeMin && uint16(l.EthernetType) != h.EtherType() {
			t.Errorf("ethertype %#x, gopacket %#x", h.EtherType(), l.EthernetType)
		}
	}
	if l := &g.dot1q; g.has(layers.LayerTypeDot1Q) && f.VLANProto != 0 {
		h := VLAN(b[f.NetworkOffset-VLANTagLen:])
		if h.Priority() != l.Priority || h.DropEligible() != l.DropEligible || h.ID() != l.VLANIdentifier || h.EtherType() != uint16(l.Type) {
			t.Errorf("vlan: ours %d/%v/%d gopacket %d/%v/%d", h.Priority(), h.DropEligible(), h.ID(), l.Priority, l.DropEligible, l.VLANIdentifier)
		}
	}
	if l := &g.arp; g.has(layers.LayerTypeARP) && f.EtherType == EtherTypeARP {
		h := ARP(b[f.NetworkOffset:f.End])
		// gopacket's LinkType is 8 bits wide: it keeps only the low byte
		// of the hardware type.
		if uint8(h.HardwareType()) != uint8(l.AddrType) || h.ProtocolType() != uint16(l.Protocol) || h.Op() != l.Operation ||
			h.HardwareLen() != int(l.HwAddressSize) || h.ProtocolLen() != int(l.ProtAddressSize) ||
			!bytes.Equal(h.SenderHardwareAddr(), l.SourceHwAddress) || !bytes.Equal(h.SenderProtocolAddr(), l.SourceProtAddress) ||
			!bytes.Equal(h.TargetHardwareAddr(), l.DstHwAddress) || !bytes.Equal(h.TargetProtocolAddr(), l.DstProtAddress) {
			t.Errorf("arp differs")
		}
	}
	pseudo := func(proto uint8, n int) uint16 {
		if f.EtherType == EtherTypeIPv4 {
			return IPv4(b[f.NetworkOffset:]).PseudoHeaderChecksum(proto, uint16(n))
		}
		return IPv6(b[f.NetworkOffset:]).PseudoHeaderChecksum(proto, uint32(n))
	}
	if l := &g.ip4; g.count(layers.LayerTypeIPv4) == 1 && f.EtherType == EtherTypeIPv4 {
		compareIPv4(t, IPv4(b[f.NetworkOffset:f.End]), l)
	}
	if l := &g.ip6; g.count(layers.LayerTypeIPv6) == 1 && f.EtherType == EtherTypeIPv6 {
		compareIPv6(t, IPv6(b[f.NetworkOffset:f.End]), l)
	}
	if f.PayloadOffset == 0 {
		return
	}
	seg := b[f.TransportOffset:f.End]
	switch f.Protocol {
	case IPProtoUDP:
		l := &g.udp
		if !g.has(layers.LayerTypeUDP) {
			t.Fatal("gopacket found no UDP")
		}
		h := UDP(seg)
		compareUDP(t, h, l)
		if c := h.ComputeChecksum(pseudo(IPProtoUDP, int(h.Length()))); built && h.Checksum() != 0 && !gpUDPChecksumEqual(c, l.Checksum) {
			t.Errorf("udp checksum %#x, gopacket %#x", c, l.Checksum)
		}
	case IPProtoTCP:
		l := &g.tcp
		if !g.has(layers.LayerTypeTCP) {
			t.Fatal("gopacket found no TCP")
		}
		h := TCP(seg)
		compareTCP(t, h, l)
		if c := h.ComputeChecksum(pseudo(IPProtoTCP, len(h))); built && c != l.Checksum {
			t.Errorf("tcp checksum %#x, gopacket %#x", c, l.Checksum)
		}
	case IPProtoICMP:
		l := &g.icmp4
		if !g.has(layers.LayerTypeICMPv4) {
			t.Fatal("gopacket found no ICMPv4")
		}
		h := ICMPv4(seg)
		compareICMPv4(t, h, l)
		if c := h.ComputeChecksum(); built && c != l.Checksum {
			t.Errorf("icmpv4 checksum %#x, gopacket %#x", c, l.Checksum)
		}
	case IPProtoICMPv6:
		l := &g.icmp6
		if !g.has(layers.LayerTypeICMPv6) {
			t.Fatal("gopacket found no ICMPv6")
		}
		h := ICMPv6(seg)
		compareICMPv6(t, h, l)
		if c := h.ComputeChecksum(pseudo(IPProtoICMPv6, len(h))); built && c != l.Checksum {
			t.Errorf("icmpv6 checksum %#x, gopacket %#x", c, l.Checksum)
		}
		if e := &g.echo6; g.has(layers.LayerTypeICMPv6Echo) {
			if h.ID() != e.Identifier || h.Sequence() != e.SeqNumber {
				t.Errorf("icmpv6 echo %d/%d, gopacket %d/%d", h.ID(), h.Sequence(), e.Identifier, e.SeqNumber)
			}
		}
	}
}

func (m MAC) asSlice() []byte { return m[:] }

func compareIPv4(t testing.TB, h IPv4, l *layers.IPv4) {
	t.Helper()
	if h.Version() != l.Version || h.HeaderLen() != int(l.IHL)*4 || h.TOS() != l.TOS || h.TotalLen() != l.Length ||
		h.ID() != l.Id || h.Flags() != uint8(l.Flags) || h.FragmentOffset() != l.FragOffset*8 || h.TTL() != l.TTL ||
		h.Protocol() != uint8(l.Protocol) || h.Checksum() != l.Checksum ||
		h.Source() != addr(l.SrcIP) || h.Destination() != addr(l.DstIP) || !bytes.Equal(h.Payload(), l.Payload) {
		t.Errorf("ipv4 differs:\nours % x\ngopacket %+v", []byte(h[:h.HeaderLen()]), l)
	}
	// gopacket lists End and NOP too; compare the other options.
	it := NewOptionIterator(h.Options())
	for _, o := range l.Options {
		if o.OptionType == IPv4OptionNOP {
			continue
		}
		kind, data, ok := it.Next()
		if o.OptionType == IPv4OptionEnd {
			if ok {
				t.Errorf("ipv4 options continue after End")
			}
			break
		}
		if !ok || kind != o.OptionType || !bytes.Equal(data, o.OptionData) {
			t.Errorf("ipv4 option %d % x, gopacket %v", kind, data, o)
		}
	}
	if h.Checksum() != 0 && h.ComputeChecksum() != h.Checksum() && h.ChecksumValid() {
		t.Errorf("ipv4 checksum: valid but recomputes differently")
	}
}

func compareIPv6(t testing.TB, h IPv6, l *layers.IPv6) {
	t.Helper()
	if h.Version() != l.Version || h.TrafficClass() != l.TrafficClass || h.FlowLabel() != l.FlowLabel ||
		h.PayloadLen() != l.Length || h.NextHeader() != uint8(l.NextHeader) || h.HopLimit() != l.HopLimit ||
		h.Source() != addr(l.SrcIP) || h.Destination() != addr(l.DstIP) {
		t.Errorf("ipv6 differs:\nours % x\ngopacket %+v", []byte(h[:40]), l)
	}
}

func compareUDP(t testing.TB, h UDP, l *layers.UDP) {
	t.Helper()
	if h.SourcePort() != uint16(l.SrcPort) || h.DestinationPort() != uint16(l.DstPort) || h.Length() != l.Length ||
		h.Checksum() != l.Checksum || !bytes.Equal(h.Payload(), l.Payload) {
		t.Errorf("udp differs: ours % x, gopacket %+v", []byte(h[:8]), l)
	}
}

func compareTCP(t testing.TB, h TCP, l *layers.TCP) {
	t.Helper()
	var flags uint8
	for i, set := range []bool{l.FIN, l.SYN, l.RST, l.PSH, l.ACK, l.URG, l.ECE, l.CWR} {
		if set {
			flags |= 1 << i
		}
	}
	if h.SourcePort() != uint16(l.SrcPort) || h.DestinationPort() != uint16(l.DstPort) || h.Seq() != l.Seq || h.Ack() != l.Ack ||
		h.HeaderLen() != int(l.DataOffset)*4 || h.Flags() != flags || h.AE() != l.NS || h.Window() != l.Window || h.Checksum() != l.Checksum ||
		h.Urgent() != l.Urgent || !bytes.Equal(h.Payload(), l.Payload) {
		t.Errorf("tcp differs: ours % x, gopacket %+v", []byte(h[:h.HeaderLen()]), l)
	}
	it := NewOptionIterator(h.Options())
	for _, o := range l.Options {
		if o.OptionType == layers.TCPOptionKindNop {
			continue
		}
		kind, data, ok := it.Next()
		if o.OptionType == layers.TCPOptionKindEndList {
			if ok {
				t.Errorf("tcp options continue after End")
			}
			break
		}
		if !ok || kind != uint8(o.OptionType) || !bytes.Equal(data, o.OptionData) {
			t.Errorf("tcp option %d % x, gopacket %v", kind, data, o)
		}
	}
	if o, err := h.ParseOptions(); err == nil {
		// The last well-formed MSS option counts, as in tcp_parse_options.
		var mss *layers.TCPOption
		for i, g := range l.Options {
			if g.OptionType == layers.TCPOptionKindMSS && len(g.OptionData) == 2 {
				mss = &l.Options[i]
			}
		}
		if mss != nil && (!o.HasMSS || o.MSS != uint16(mss.OptionData[0])<<8|uint16(mss.OptionData[1])) {
			t.Errorf("tcp MSS %d, gopacket %v", o.MSS, mss)
		}
		if mss == nil && o.HasMSS {
			t.Errorf("tcp MSS %d, gopacket none", o.MSS)
		}
	}
}

func compareICMPv4(t testing.TB, h ICMPv4, l *layers.ICMPv4) {
	t.Helper()
	if h.Type() != l.TypeCode.Type() || h.Code() != l.TypeCode.Code() || h.Checksum() != l.Checksum ||
		h.ID() != l.Id || h.Sequence() != l.Seq || !bytes.Equal(h.Payload(), l.Payload) {
		t.Errorf("icmpv4 differs: ours % x, gopacket %+v", []byte(h[:8]), l)
	}
}

func compareICMPv6(t testing.TB, h ICMPv6, l *layers.ICMPv6) {
	t.Helper()
	// gopacket's ICMPv6 layer is the 4-byte header; its payload starts
	// with our Rest word.
	if h.Type() != l.TypeCode.Type() || h.Code() != l.TypeCode.Code() || h.Checksum() != l.Checksum ||
		!bytes.Equal(h[4:], l.Payload) {
		t.Errorf("icmpv6 differs: ours % x, gopacket %+v", []byte(h[:8]), l)
	}
}

// TestGopacketRandomChecksums builds many random UDP, TCP and ICMP packets
// with gopacket and compares every checksum with ours.
func TestGopacketRandomChecksums(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rb := func(n int) []byte { return randBytes(r, n) }
	ipOpts := [][]layers.IPv4Option{
		nil,
		{{OptionType: 0x94, OptionLength: 4, OptionData: []byte{0, 0}}},
		{{OptionType: 0x07, OptionLength: 11, OptionData: rb(9)}, {OptionType: 1}, {OptionType: 0}},
		{{OptionType: 0x44, OptionLength: 36, OptionData: rb(34)}},
	}
	for i := range 400 {
		v6 := i%2 == 1
		var ipl gopacket.SerializableLayer
		var nl gopacket.NetworkLayer
		proto := []layers.IPProtocol{layers.IPProtocolUDP, layers.IPProtocolTCP, layers.IPProtocolICMPv4}[i%3]
		if v6 {
			if proto == layers.IPProtocolICMPv4 {
				proto = layers.IPProtocolICMPv6
			}
			ip := &layers.IPv6{Version: 6, TrafficClass: uint8(r.Uint32()), FlowLabel: r.Uint32() & 0xfffff, NextHeader: proto,
				HopLimit: uint8(r.Uint32()), SrcIP: rb(16), DstIP: rb(16)}
			ipl, nl = ip, ip
		} else {
			ip := &layers.IPv4{Version: 4, TOS: uint8(r.Uint32()), Id: uint16(r.Uint32()), Flags: layers.IPv4Flag(r.IntN(3)) &^ layers.IPv4MoreFragments,
				TTL: uint8(r.Uint32()), Protocol: proto, SrcIP: rb(4), DstIP: rb(4), Options: ipOpts[r.IntN(len(ipOpts))]}
			ipl, nl = ip, ip
		}
		var tl gopacket.SerializableLayer
		switch proto {
		case layers.IPProtocolUDP:
			u := &layers.UDP{SrcPort: layers.UDPPort(r.Uint32()), DstPort: layers.UDPPort(r.Uint32())}
			u.SetNetworkLayerForChecksum(nl)
			tl = u
		case layers.IPProtocolTCP:
			tcp := &layers.TCP{SrcPort: layers.TCPPort(r.Uint32()), DstPort: layers.TCPPort(r.Uint32()), Seq: r.Uint32(), Ack: r.Uint32(),
				ACK: true, PSH: r.IntN(2) == 0, NS: r.IntN(2) == 0, Window: uint16(r.Uint32()), Urgent: uint16(r.Uint32())}
			if r.IntN(2) == 0 {
				tcp.Options = []layers.TCPOption{{OptionType: layers.TCPOptionKindTimestamps, OptionData: rb(8)}}
			}
			tcp.SetNetworkLayerForChecksum(nl)
			tl = tcp
		case layers.IPProtocolICMPv4:
			tl = &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(uint8(r.Uint32()), uint8(r.Uint32())), Id: uint16(r.Uint32()), Seq: uint16(r.Uint32())}
		case layers.IPProtocolICMPv6:
			m := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoReply, 0)}
			m.SetNetworkLayerForChecksum(nl)
			tl = m
		}
		et := layers.EthernetTypeIPv4
		if v6 {
			et = layers.EthernetTypeIPv6
		}
		payload := rb(r.IntN(600) + 4)
		b := gpSerialize(t, &layers.Ethernet{SrcMAC: rb(6), DstMAC: rb(6), EthernetType: et}, ipl, tl, gopacket.Payload(payload))
		f, err := ParseFrame(b)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if err := f.VerifyChecksum(b); err != nil && !(f.Protocol == IPProtoUDP && UDP(b[f.TransportOffset:]).Checksum() == 0) {
			t.Fatalf("packet %d: %v", i, err)
		}
		compareWithGopacket(t, b, f, gpDecode(t, b), true)
		if t.Failed() {
			t.Fatalf("packet %d: % x", i, b)
		}
	}
}

// TestBuiltHereReadByGopacket decodes this package's output with gopacket,
// compares the fields, and serializes gopacket's decoded layers again with
// its own checksums and lengths: the bytes must come out the same.
func TestBuiltHereReadByGopacket(t *testing.T) {
	frames := map[string][]byte{
		"BuildUDP v4":        udpFrame(t, udp4Frame(), 100),
		"BuildUDP v6":        udpFrame(t, udp6Frame(), 99),
		"BuildUDP v4 vlan":   udpFrame(t, &UDPFrame{Source: mac1, Destination: mac2, VLANProto: EtherTypeVLAN, VLANTCI: 0xb00b, SourceIP: ip4a, DestinationIP: ip4b, SourcePort: 5, DestinationPort: 6, TOS: 4, TTL: 9, ID: 77, DontFragment: true}, 1),
		"BuildUDP v6 fields": udpFrame(t, &UDPFrame{SourceIP: ip6b, DestinationIP: ip6a, SourcePort: 7, DestinationPort: 8, TOS: 0xfc, TTL: 255, FlowLabel: 0xfffff}, 0),
		"tcp4":               tcpFrame(false, 33),
		"tcp6":               tcpFrame(true, 1),
		"icmp4":              icmpFrame(false),
		"icmp6":              icmpFrame(true),
		"arp":                arpFrame(),
	}
	for name, b := range frames {
		t.Run(name, func(t *testing.T) {
			p := gpDecode(t, b)
			f, err := ParseFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			compareWithGopacket(t, b, f, p, true)

			// Re-serialize what gopacket decoded, with its own lengths and
			// checksums.
			var ls []gopacket.SerializableLayer
			var nl gopacket.NetworkLayer
			for _, lt := range p.decoded {
				switch lt {
				case layers.LayerTypeEthernet:
					ls = append(ls, &p.eth)
				case layers.LayerTypeDot1Q:
					ls = append(ls, &p.dot1q)
				case layers.LayerTypeARP:
					ls = append(ls, &p.arp)
				case layers.LayerTypeIPv4:
					nl = &p.ip4
					ls = append(ls, &p.ip4)
				case layers.LayerTypeIPv6:
					nl = &p.ip6
					ls = append(ls, &p.ip6)
				case layers.LayerTypeUDP:
					p.udp.SetNetworkLayerForChecksum(nl)
					ls = append(ls, &p.udp)
				case layers.LayerTypeTCP:
					p.tcp.SetNetworkLayerForChecksum(nl)
					ls = append(ls, &p.tcp)
				case layers.LayerTypeICMPv4:
					ls = append(ls, &p.icmp4)
				case layers.LayerTypeICMPv6:
					p.icmp6.SetNetworkLayerForChecksum(nl)
					ls = append(ls, &p.icmp6)
				case layers.LayerTypeICMPv6Echo:
					// gopacket's ICMPv6Echo decoder does not keep the
					// echo payload, so it cannot be serialized again.
					return
				case gopacket.LayerTypePayload:
					ls = append(ls, p.payload)
				}
			}
			again := gpSerialize(t, ls...)
			// gopacket pads short frames to 60 bytes; ARP's padding is no
			// layer of its own.
			if len(again) < len(b) {
				again = append(again, b[len(again):]...)
			}
			if !bytes.Equal(again[:len(b)], b) || len(bytes.Trim(again[len(b):], "\x00")) != 0 {
				t.Fatalf("gopacket re-serialized differently:\nours     % x\ngopacket % x", b, again)
			}
		})
	}
}

// TestGopacketIPv6ExtensionHeaders checks that SkipExtensionHeaders lands
// on the transport header gopacket finds after the same chain.
func TestGopacketIPv6ExtensionHeaders(t *testing.T) {
	hbh := []byte{IPProtoDstOpts, 0, 1, 4, 0, 0, 0, 0}
	dst := []byte{IPProtoRouting, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	rt := []byte{IPProtoFragment, 0, 0, 0, 0, 0, 0, 0}
	frag := []byte{IPProtoUDP, 0, 0, 0, 0, 0, 0, 1} // atomic fragment
	chains := map[string]struct {
		first uint8
		ext   []byte
	}{
		"hbh dst rt frag": {IPProtoHopByHop, bytes.Join([][]byte{hbh, dst, rt, frag}, nil)},
		"dst":             {IPProtoDstOpts, []byte{IPProtoUDP, 0, 1, 4, 0, 0, 0, 0}},
		"routing":         {IPProtoRouting, []byte{IPProtoUDP, 0, 0, 0, 0, 0, 0, 0}},
	}
	for name, c := range chains {
		t.Run(name, func(t *testing.T) {
			b := make([]byte, 14+40+len(c.ext)+12)
			Ethernet(b).Encode(&EthernetFields{EtherType: EtherTypeIPv6})
			ip := IPv6(b[14:])
			ip.Encode(&IPv6Fields{PayloadLen: uint16(len(c.ext) + 12), NextHeader: c.first, HopLimit: 1, Source: ip6a, Destination: ip6b})
			copy(b[54:], c.ext)
			u := UDP(b[54+len(c.ext):])
			u.Encode(&UDPFields{SourcePort: 1, DestinationPort: 2, Length: 12})
			copy(u.Payload(), "abcd")
			u.SetChecksum(u.ComputeChecksum(ip.PseudoHeaderChecksum(IPProtoUDP, 12)))

			f, err := ParseFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.VerifyChecksum(b); err != nil {
				t.Fatal(err)
			}
			p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true})
			l, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if !ok {
				if name == "hbh dst rt frag" {
					// gopacket hands a Fragment header's payload to a
					// fragment layer even for an atomic fragment (offset
					// 0, M clear, RFC 6946), which is a whole packet here.
					return
				}
				t.Fatalf("gopacket found no UDP: %v", p)
			}
			if !bytes.Equal(l.Contents, b[f.TransportOffset:f.TransportOffset+8]) || string(l.Payload) != "abcd" {
				t.Fatalf("transport at %d differs from gopacket's", f.TransportOffset)
			}
		})
	}
}

// TestIPv6FragmentEncode builds Fragment headers with Encode and the
// setters and checks every field as gopacket decodes it, and that
// ParseIPv6Fragment reads them back and refuses a short header.
func TestIPv6FragmentEncode(t *testing.T) {
	for _, f := range []IPv6FragmentFields{
		{NextHeader: IPProtoUDP, FragmentOffset: 0, MoreFragments: true, ID: 0x01020304},
		{NextHeader: IPProtoTCP, FragmentOffset: 1448, MoreFragments: true, ID: 0xffffffff},
		{NextHeader: IPProtoICMPv6, FragmentOffset: 65528, MoreFragments: false, ID: 7},
		{NextHeader: IPProtoUDP, FragmentOffset: 13, ID: 1}, // low bits dropped: 8
	} {
		b := bytes.Repeat([]byte{0xee}, IPv6FragmentHeaderLen)
		IPv6Fragment(b).Encode(&f)
		pkt := gopacket.NewPacket(b, layers.LayerTypeIPv6Fragment, gopacket.Default)
		gl, ok := pkt.Layer(layers.LayerTypeIPv6Fragment).(*layers.IPv6Fragment)
		if !ok {
			t.Fatalf("%+v: gopacket decodes no Fragment header from % x: %v", f, b, pkt.ErrorLayer())
		}
		g := *gl
		if uint8(g.NextHeader) != f.NextHeader || g.FragmentOffset*8 != f.FragmentOffset&^7 || g.MoreFragments != f.MoreFragments ||
			g.Identification != f.ID || g.Reserved1 != 0 || g.Reserved2 != 0 {
			t.Errorf("%+v encoded as % x: gopacket reads %+v", f, b, g)
		}
		h, err := ParseIPv6Fragment(append(b, 1, 2, 3))
		if err != nil || len(h) != IPv6FragmentHeaderLen || h.NextHeader() != f.NextHeader || h.FragmentOffset() != f.FragmentOffset&^7 ||
			h.MoreFragments() != f.MoreFragments || h.ID() != f.ID {
			t.Errorf("%+v: ParseIPv6Fragment: %v, %v", f, h, err)
		}
		// The setters, one field at a time, over a header of other values.
		o := bytes.Repeat([]byte{0}, IPv6FragmentHeaderLen)
		s := IPv6Fragment(o)
		s.SetMoreFragments(true)
		s.SetFragmentOffset(f.FragmentOffset)
		s.SetMoreFragments(f.MoreFragments)
		s.SetNextHeader(f.NextHeader)
		s.SetID(f.ID)
		if !bytes.Equal(o, b) {
			t.Errorf("%+v: setters wrote % x, Encode % x", f, o, b)
		}
	}
	if _, err := ParseIPv6Fragment(make([]byte, 7)); !errors.Is(err, ErrTruncated) {
		t.Errorf("ParseIPv6Fragment of 7 bytes: %v, want ErrTruncated", err)
	}
}

// TestEncodeAddressFamily checks that IPv4.Encode and IPv6.Encode panic,
// naming the field, for an address of the other family or the zero Addr,
// and that IPv4.Encode takes an IPv4-mapped IPv6 address.
func TestEncodeAddressFamily(t *testing.T) {
	v4, v6, mapped := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("::ffff:198.18.0.2")
	b := make([]byte, 60)
	panicsWith := func(want string, fn func()) {
		t.Helper()
		defer func() {
			if r := fmt.Sprint(recover()); r != want {
				t.Errorf("panic %q, want %q", r, want)
			}
		}()
		fn()
	}
	panicsWith("header: IPv4.Encode: Source is the zero netip.Addr", func() { IPv4(b).Encode(&IPv4Fields{Destination: v4}) })
	panicsWith("header: IPv4.Encode: Destination is an IPv6 address", func() { IPv4(b).Encode(&IPv4Fields{Source: v4, Destination: v6}) })
	panicsWith("header: IPv6.Encode: Source is an IPv4 address (an IPv6 header takes its mapped form, netip.AddrFrom16(a.As16()))", func() { IPv6(b).Encode(&IPv6Fields{Source: v4, Destination: v6}) })
	panicsWith("header: IPv6.Encode: Destination is the zero netip.Addr", func() { IPv6(b).Encode(&IPv6Fields{Source: v6}) })
	IPv4(b).Encode(&IPv4Fields{Source: v4, Destination: mapped})
	if IPv4(b).Destination() != mapped.Unmap() {
		t.Errorf("IPv4.Encode of a mapped destination wrote %v", IPv4(b).Destination())
	}
	IPv6(b).Encode(&IPv6Fields{Source: v6, Destination: mapped})
	if IPv6(b).Destination() != mapped {
		t.Errorf("IPv6.Encode of a mapped destination wrote %v", IPv6(b).Destination())
	}
}
