package header

import "net/netip"

// DefaultTTL is the IPv4 TTL and IPv6 Hop Limit BuildUDP writes when
// UDPFrame.TTL is 0: 64, the Linux default (net.ipv4.ip_default_ttl,
// RFC 1700's recommendation).
const DefaultTTL = 64

// UDPFrame describes an Ethernet frame carrying a UDP datagram over IPv4 or
// IPv6, optionally VLAN tagged, for BuildUDP. The zero value is not usable:
// the addresses must be set. The IP family follows the addresses.
type UDPFrame struct {
	Source      MAC // Ethernet source
	Destination MAC // Ethernet destination

	// VLANProto is EtherTypeVLAN or EtherTypeQinQ to add one tag with
	// VLANTCI, or 0 for an untagged frame (VLANTCI is then ignored);
	// BuildUDP refuses any other value.
	VLANProto uint16
	VLANTCI   uint16

	// SourceIP and DestinationIP are both IPv4 (Is4) or both IPv6. An
	// IPv6 zone (fe80::1%eth0) is not written, as it is no part of the
	// header: it names the interface, which the device sending the frame
	// decides.
	SourceIP      netip.Addr
	DestinationIP netip.Addr
	TOS           uint8  // IPv4 TOS or IPv6 Traffic Class
	TTL           uint8  // IPv4 TTL or IPv6 Hop Limit; 0 means DefaultTTL
	ID            uint16 // IPv4 Identification
	DontFragment  bool   // IPv4 DF flag
	FlowLabel     uint32 // IPv6 Flow Label, low 20 bits

	SourcePort      uint16
	DestinationPort uint16

	// NoChecksum leaves the UDP checksum 0: "none" over IPv4 (RFC 768),
	// allowed over IPv6 only for tunnels (RFC 6935).
	NoChecksum bool

	// PartialChecksum stores only the pseudo-header sum in the UDP
	// checksum field, leaving the packet CHECKSUM_PARTIAL for a device or
	// FinishChecksum to complete: csum_start is the returned
	// TransportOffset and csum_offset is 6.
	PartialChecksum bool
}

// HeaderLen returns the length of the headers BuildUDP writes: Ethernet,
// the VLAN tag if any, IPv4 (20 bytes, no options) or IPv6 (40), and UDP.
func (f *UDPFrame) HeaderLen() int {
	n := EthernetHeaderLen + IPv4MinHeaderLen + UDPHeaderLen
	if f.VLANProto != 0 {
		n += VLANTagLen
	}
	if !f.SourceIP.Is4() {
		n += IPv6HeaderLen - IPv4MinHeaderLen
	}
	return n
}

// BuildUDP writes the headers f describes at the start of frame and
// computes the IPv4 header and UDP checksums over them and the payload,
// which the caller has already put at frame[f.HeaderLen():]. The frame is
// all of frame: the IP and UDP lengths are derived from len(frame). It
// returns the offsets of what it built, as ParseFrame would report them.
//
// It returns ErrBadAddress when the IP addresses are invalid or of
// different families, ErrBadVLAN for a VLANProto other than 0,
// EtherTypeVLAN and EtherTypeQinQ, ErrTruncated when frame is shorter than
// f.HeaderLen(),
// and ErrBadLength when the datagram is too long for the 16-bit IP and UDP
// length fields; frame is then unchanged. It does not keep frame and does
// not allocate.
func BuildUDP(frame []byte, f *UDPFrame) (Frame, error) {
	var r Frame
	v4 := f.SourceIP.Is4()
	if !f.SourceIP.IsValid() || v4 != f.DestinationIP.Is4() || !f.DestinationIP.IsValid() {
		return r, ErrBadAddress
	}
	if p := f.VLANProto; p != 0 && p != EtherTypeVLAN && p != EtherTypeQinQ {
		return r, ErrBadVLAN
	}
	hl := f.HeaderLen()
	if len(frame) < hl {
		return r, ErrTruncated
	}
	r.NetworkOffset = EthernetHeaderLen
	if f.VLANProto != 0 {
		r.NetworkOffset += VLANTagLen
	}
	r.TransportOffset = hl - UDPHeaderLen
	r.PayloadOffset, r.End = hl, len(frame)
	r.Protocol = IPProtoUDP
	if f.VLANProto != 0 {
		r.VLANProto, r.VLANTCI = f.VLANProto, f.VLANTCI // an untagged frame has no TCI
	}
	ulen := len(frame) - r.TransportOffset
	if ulen > 0xffff || (v4 && len(frame)-r.NetworkOffset > IPv4MaxTotalLen) {
		return Frame{}, ErrBadLength
	}
	r.EtherType = EtherTypeIPv6
	if v4 {
		r.EtherType = EtherTypeIPv4
	}
	ttl := f.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}

	eth := Ethernet(frame)
	eth.SetDestination(f.Destination)
	eth.SetSource(f.Source)
	if f.VLANProto != 0 {
		eth.SetEtherType(f.VLANProto)
		vl := VLAN(frame[EthernetHeaderLen:])
		vl.SetTCI(f.VLANTCI)
		vl.SetEtherType(r.EtherType)
	} else {
		eth.SetEtherType(r.EtherType)
	}

	var pseudo uint16
	if v4 {
		ip := IPv4(frame[r.NetworkOffset:])
		var flags uint8
		if f.DontFragment {
			flags = IPv4FlagDontFragment
		}
		ip.Encode(&IPv4Fields{
			TOS:         f.TOS,
			TotalLen:    uint16(len(frame) - r.NetworkOffset),
			ID:          f.ID,
			Flags:       flags,
			TTL:         ttl,
			Protocol:    IPProtoUDP,
			Source:      f.SourceIP,
			Destination: f.DestinationIP,
		})
		pseudo = ip.PseudoHeaderChecksum(IPProtoUDP, uint16(ulen))
	} else {
		ip := IPv6(frame[r.NetworkOffset:])
		ip.Encode(&IPv6Fields{
			TrafficClass: f.TOS,
			FlowLabel:    f.FlowLabel,
			PayloadLen:   uint16(ulen),
			NextHeader:   IPProtoUDP,
			HopLimit:     ttl,
			Source:       f.SourceIP,
			Destination:  f.DestinationIP,
		})
		pseudo = ip.PseudoHeaderChecksum(IPProtoUDP, uint32(ulen))
	}

	u := UDP(frame[r.TransportOffset:])
	u.Encode(&UDPFields{SourcePort: f.SourcePort, DestinationPort: f.DestinationPort, Length: uint16(ulen)})
	switch {
	case f.NoChecksum:
	case f.PartialChecksum:
		u.SetChecksum(pseudo)
	default:
		u.SetChecksum(u.ComputeChecksum(pseudo))
	}
	return r, nil
}
