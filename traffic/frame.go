package traffic

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
)

// frameTemplate is the prebuilt frame of one payload size for a link-layer
// device: the headers header.BuildUDP writes with destination port 0 and an
// all-zero payload, and what each packet changes from it (the destination
// port of its flow, the stamp, and the UDP checksum, updated from the
// template's sum rather than recomputed over the payload: RFC 1624).
type frameTemplate struct {
	frame  []byte
	udpOff int    // offset of the UDP header
	payOff int    // offset of the UDP payload
	sum0   uint16 // ones' complement sum the template's UDP checksum covers
	noCsum bool   // UDP checksum left 0 (IPv4 only)
}

func newTemplate(f *header.UDPFrame, size int) (frameTemplate, error) {
	tf := *f
	tf.DestinationPort = 0
	tf.PartialChecksum = false
	hl := tf.HeaderLen()
	frame := make([]byte, hl+size)
	r, err := header.BuildUDP(frame, &tf)
	if err != nil {
		return frameTemplate{}, fmt.Errorf("%w: frame of %d payload bytes: %w", ErrConfig, size, err)
	}
	t := frameTemplate{frame: frame, udpOff: r.TransportOffset, payOff: r.PayloadOffset, noCsum: tf.NoChecksum}
	// The stored checksum is the complement of the sum it covers (a
	// computed 0 is stored as 0xffff, which is the same zero in ones'
	// complement arithmetic).
	t.sum0 = ^header.UDP(frame[r.TransportOffset:]).Checksum()
	return t, nil
}

// fill writes the template's frame into p (len(p) == len(t.frame)) with
// destination port port and stamp s, and completes the UDP checksum.
func (t *frameTemplate) fill(p []byte, port uint16, s Stamp) {
	copy(p, t.frame)
	u := header.UDP(p[t.udpOff:])
	u.SetDestinationPort(port)
	st := p[t.payOff : t.payOff+StampLen]
	PutStamp(st, s)
	if t.noCsum {
		return
	}
	sum := header.Checksum(st, header.ChecksumCombine(t.sum0, port))
	c := ^sum
	if c == 0 {
		c = 0xffff // RFC 768: a computed 0 is sent as all ones
	}
	u.SetChecksum(c)
}

// reflectUDP turns the UDP frame p, parsed as f, into its answer: Ethernet
// addresses, IP addresses and UDP ports swapped. The IP header and UDP
// checksums cover the swapped fields as sums, so they stay valid (or stay
// partial). f must come from header.ParseFrameInto(p, f) with a UDP transport.
func reflectUDP(p []byte, f *header.Frame) {
	var mac [6]byte
	copy(mac[:], p[0:6])
	copy(p[0:6], p[6:12])
	copy(p[6:12], mac[:])
	n := f.NetworkOffset
	switch f.EtherType {
	case header.EtherTypeIPv4:
		swap(p[n+12:n+16], p[n+16:n+20])
	case header.EtherTypeIPv6:
		swap(p[n+8:n+24], p[n+24:n+40])
	}
	t := f.TransportOffset
	swap(p[t:t+2], p[t+2:t+4])
}

func swap(a, b []byte) {
	for i := range a {
		a[i], b[i] = b[i], a[i]
	}
}

// fillUDPChecksum computes the UDP checksum of the frame p, parsed as f,
// over the pseudo-header, the header and the payload, leaving an IPv4
// checksum of 0 (none) as it is.
func fillUDPChecksum(p []byte, f *header.Frame) {
	u := header.UDP(p[f.TransportOffset:])
	if f.EtherType == header.EtherTypeIPv4 && u.Checksum() == 0 {
		return
	}
	u.SetChecksum(u.ComputeChecksum(udpPseudo(p, f)))
}

// udpPseudo returns the pseudo-header sum of the UDP frame p, parsed as f
// (RFC 768, RFC 8200 section 8.1): what a CHECKSUM_PARTIAL UDP checksum
// field holds.
func udpPseudo(p []byte, f *header.Frame) uint16 {
	l := header.UDP(p[f.TransportOffset:]).Length()
	if f.EtherType == header.EtherTypeIPv4 {
		return header.IPv4(p[f.NetworkOffset:]).PseudoHeaderChecksum(header.IPProtoUDP, l)
	}
	return header.IPv6(p[f.NetworkOffset:]).PseudoHeaderChecksum(header.IPProtoUDP, uint32(l))
}

// frameSrc returns the IP source of the frame p, parsed as f with an IP
// network header.
func frameSrc(p []byte, f *header.Frame) netip.Addr {
	if f.EtherType == header.EtherTypeIPv4 {
		return header.IPv4(p[f.NetworkOffset:]).Source()
	}
	return header.IPv6(p[f.NetworkOffset:]).Source()
}

// frameDst returns the IP destination of the frame p, parsed as f with an
// IP network header.
func frameDst(p []byte, f *header.Frame) netip.Addr {
	if f.EtherType == header.EtherTypeIPv4 {
		return header.IPv4(p[f.NetworkOffset:]).Destination()
	}
	return header.IPv6(p[f.NetworkOffset:]).Destination()
}

// deviceMAC returns the MAC address of a link-layer device that reports
// one (driver/afpacket's HardwareAddr gives a header.MAC, driver/afxdp's a
// net.HardwareAddr), or false.
func deviceMAC(dev netdev.Device) (header.MAC, bool) {
	switch d := dev.(type) {
	case interface{ HardwareAddr() header.MAC }:
		m := d.HardwareAddr()
		return m, m != header.MAC{}
	case interface{ HardwareAddr() net.HardwareAddr }:
		if hw := d.HardwareAddr(); len(hw) == len(header.MAC{}) {
			return header.MAC(hw), true
		}
	}
	return header.MAC{}, false
}

// toHost reports whether the frame p, parsed as f, is one the host's
// stack would take in as addressed to it: without a VLAN tag (a VLAN the
// host has configured reaches the stack through its own interface, the
// tag removed; a link-layer device on the parent sees it tagged), and to
// mac (any unicast address when mac is unknown, ok false), or with groups
// to a broadcast or multicast address too. A frame for another station
// reaches a socket of the interface in promiscuous mode, or on a bridge or
// a veth whose peer sends it anyway (PACKET_OTHERHOST).
func toHost(p []byte, f *header.Frame, mac header.MAC, ok, groups bool) bool {
	if f.VLANProto != 0 {
		return false
	}
	dst := header.MAC(p[0:6])
	if dst.IsMulticast() {
		return groups
	}
	return !ok || dst == mac
}

// answerable reports whether the request frame p, parsed as f with a UDP
// transport, may be answered by swapping its addresses (reflectUDP): from
// one station (a unicast, nonzero source MAC, and a source IP that is
// unicast, not unspecified and not loopback, from a port other than 0), to
// one (a destination IP that is no group's, and for IPv4 not the limited
// broadcast), since the answer's source is the request's destination. A
// request to a subnet's broadcast address is not recognised as one.
func answerable(p []byte, f *header.Frame) bool {
	src := header.MAC(p[6:12])
	if src.IsMulticast() || src == (header.MAC{}) {
		return false
	}
	if f.EtherType != header.EtherTypeIPv4 && f.EtherType != header.EtherTypeIPv6 {
		return false
	}
	s, d := frameSrc(p, f), frameDst(p, f)
	bcast := netip.AddrFrom4([4]byte{255, 255, 255, 255})
	if s.IsMulticast() || s.IsUnspecified() || s.IsLoopback() || s == bcast || d.IsMulticast() || d == bcast {
		return false
	}
	return header.UDP(p[f.TransportOffset:]).SourcePort() != 0
}

// ipv6OptionsOK reports whether the extension headers of the IPv6 frame
// p, parsed as f, are ones the host's stack would deliver to a socket, as
// the kernel does with its default settings:
//
//   - Hop-by-Hop and Destination Options (ip6_parse_tlv, RFC 8200 section
//     4.2): at most 8 options besides padding in each header
//     (net.ipv6.max_hbh_opts_number, max_dst_opts_number); padding that is
//     padding (the iterator's rules: at most 7 bytes in a row, PadN zero,
//     RFC 4942 section 2.1.9.5); no unknown option whose type asks for the
//     packet to be discarded; in Hop-by-Hop, a Router Alert of exactly 2
//     data bytes (ipv6_hop_ra), an IOAM option 4n-aligned
//     (ipv6_hop_ioam), no Jumbo Payload (ipv6_hop_jumbo drops one on a
//     packet under 64 KiB, as every frame here is) and no CALIPSO
//     (ipv6_hop_calipso, with no NetLabel domain for it); no Home Address
//     option (Mobile IPv6, RFC 6275, which this host does not run; unknown
//     in Hop-by-Hop, whose type says discard).
//   - Routing (ipv6_rthdr_rcv): a unicast destination, Segments Left 0,
//     and a type other than Mobile IPv6's 2, RPL's 3 and segment routing's
//     4, which are dropped with seg6_enabled and rpl_seg_enabled off and
//     no Mobile IPv6 binding; with Segments Left above 0 the host would
//     route the packet on, or refuse it (type 0, RFC 5095), not deliver
//     it.
//   - no Authentication header: without an IPsec security association
//     the host drops the packet (xfrm6_rcv).
//
// A frame that is not IPv6, or has no extension header, passes.
func ipv6OptionsOK(p []byte, f *header.Frame) bool {
	if f.EtherType != header.EtherTypeIPv6 || f.TransportOffset == 0 {
		return true
	}
	n := f.NetworkOffset
	next, off := p[n+6], n+header.IPv6HeaderLen
	for off < f.TransportOffset {
		switch next {
		case header.IPProtoHopByHop, header.IPProtoDstOpts:
			h, err := header.ParseIPv6Options(p[off:f.TransportOffset])
			if err != nil || !optionsOK(p[n:], h, next == header.IPProtoHopByHop) {
				return false
			}
			next, off = h.NextHeader(), off+h.HeaderLen()
		case header.IPProtoFragment:
			next, off = p[off], off+header.IPv6FragmentHeaderLen
		case header.IPProtoRouting:
			r, err := header.ParseIPv6Routing(p[off:f.TransportOffset])
			if err != nil || r.SegmentsLeft() != 0 || frameDst(p, f).IsMulticast() {
				return false
			}
			switch r.RoutingType() {
			case header.IPv6RoutingType2, header.IPv6RoutingRPL, header.IPv6RoutingSegments:
				return false
			}
			next, off = r.NextHeader(), off+r.HeaderLen()
		case header.IPProtoAH:
			return false
		default:
			return true
		}
	}
	return true
}

// Hop-by-Hop options the kernel knows beyond those of package header.
const (
	optCALIPSO = 0x07 // RFC 5570: checked against the NetLabel domains (ipv6_hop_calipso)
	optIOAM    = 0x31 // RFC 9486: 4n-aligned or dropped (ipv6_hop_ioam)
)

// maxOptions is the kernel's default limit on the options of a Hop-by-Hop
// or Destination Options header, padding not counted
// (IP6_DEFAULT_MAX_HBH_OPTS_CNT, IP6_DEFAULT_MAX_DST_OPTS_CNT).
const maxOptions = 8

// optionsOK applies ipv6OptionsOK's rules to the options of h, a
// Hop-by-Hop header when hbh is true, else a Destination Options header;
// ip is the packet from its IPv6 header on, of which h is a part.
func optionsOK(ip []byte, h header.IPv6Options, hbh bool) bool {
	count := 0
	it := header.NewIPv6OptionIterator(h.Options())
	for typ, data, ok := it.Next(); ok; typ, data, ok = it.Next() {
		if count++; count > maxOptions {
			return false
		}
		switch {
		case typ == header.IPv6OptionHomeAddress:
			return false
		case hbh && typ == header.IPv6OptionRouterAlert:
			if len(data) != 2 {
				return false
			}
		case hbh && (typ == header.IPv6OptionJumbo || typ == optCALIPSO):
			// CALIPSO: refused by the kernel when malformed, and
			// when NetLabel knows no domain for it (none is set up
			// here).
			return false
		case hbh && typ == optIOAM:
			// The option's offset from the IPv6 header, as the
			// kernel's optoff: data, a part of ip, follows the type
			// and length bytes.
			if optoff := cap(ip) - cap(data) - 2; optoff&3 != 0 {
				return false
			}
		case header.IPv6OptionUnknownAction(typ) != header.IPv6OptionSkip:
			return false
		}
	}
	return it.Err() == nil
}
