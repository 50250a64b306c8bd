package header

import (
	"encoding/binary"
	"net"
)

// EtherType values, from the IEEE 802 numbers registry (IANA
// "ieee-802-numbers").
const (
	EtherTypeIPv4 uint16 = 0x0800 // Internet Protocol version 4, RFC 894
	EtherTypeARP  uint16 = 0x0806 // Address Resolution Protocol, RFC 826
	EtherTypeVLAN uint16 = 0x8100 // IEEE 802.1Q customer VLAN tag (C-tag)
	EtherTypeIPv6 uint16 = 0x86dd // Internet Protocol version 6, RFC 2464
	EtherTypeQinQ uint16 = 0x88a8 // IEEE 802.1ad service VLAN tag (S-tag)

	// EtherTypeMin is the smallest EtherType (IEEE 802.3 clause 3.2.6).
	// A smaller value in the EtherType position is an IEEE 802.3 length
	// and an LLC header follows.
	EtherTypeMin uint16 = 0x0600

	// EtherType8022 and EtherType8023 are the protocols the kernel gives
	// an IEEE 802.3 frame, whose EtherType position holds a length
	// (eth_type_trans): ETH_P_802_2 for one with an 802.2 LLC header, and
	// ETH_P_802_3 for raw 802.3 (Novell IPX), whose payload starts 0xffff.
	// Not EtherTypes on the wire.
	EtherType8022 uint16 = 0x0004
	EtherType8023 uint16 = 0x0001
)

// Header lengths of the link layer, in bytes.
const (
	// EthernetHeaderLen is the length of an Ethernet II header: two MAC
	// addresses and the EtherType (IEEE 802.3 clause 3.1.1, RFC 894). It
	// is the kernel's ETH_HLEN.
	EthernetHeaderLen = 14

	// EthernetMinFrameLen is the shortest Ethernet frame without the
	// 4-byte frame check sequence (IEEE 802.3: 64 bytes with it). Shorter
	// frames are padded by the sender; the padding follows the network
	// packet, which is why parsers trim to the IP length fields. It is
	// the kernel's ETH_ZLEN.
	EthernetMinFrameLen = 60

	// VLANTagLen is the length of an IEEE 802.1Q tag (TPID and TCI); a
	// tagged frame is this much longer. It is the kernel's VLAN_HLEN.
	VLANTagLen = 4
)

// MAC is an IEEE 802 48-bit MAC address in transmission order. The zero
// value is 00:00:00:00:00:00. It is a value, so views return it without
// allocating.
type MAC [6]byte

// BroadcastMAC is ff:ff:ff:ff:ff:ff.
var BroadcastMAC = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// MACFrom returns the first six bytes of a as a MAC (for example from a
// net.HardwareAddr), and false when a is not 6 bytes long.
func MACFrom(a []byte) (MAC, bool) {
	if len(a) != 6 {
		return MAC{}, false
	}
	return MAC(a), true
}

// String returns m in the colon-separated lower-case hex form,
// "02:00:00:00:00:01". It allocates.
func (m MAC) String() string { return net.HardwareAddr(m[:]).String() }

// IsMulticast reports whether m is a group address: the least significant
// bit of its first byte (the I/G bit) is set. Broadcast is multicast.
func (m MAC) IsMulticast() bool { return m[0]&1 != 0 }

// Ethernet is a view of an Ethernet II frame starting at its header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Destination MAC address                   |
//	+                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               |                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//	|                       Source MAC address                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           EtherType           |  payload ...
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The frame check sequence is not part of it. A view does not copy: reads
// and writes go to the bytes it was made from, and its methods assume at
// least EthernetHeaderLen bytes (as ParseEthernet checks), panicking with an
// index out of range on fewer.
type Ethernet []byte

// EthernetFields holds the fields Ethernet.Encode writes.
type EthernetFields struct {
	Destination MAC
	Source      MAC
	EtherType   uint16 // such as EtherTypeIPv4, EtherTypeVLAN
}

// ParseEthernet checks that b holds an Ethernet header and returns b as an
// Ethernet view. It returns a *ParseError wrapping ErrTruncated when b is
// shorter than EthernetHeaderLen. The returned view aliases b. It does not
// allocate.
func ParseEthernet(b []byte) (Ethernet, error) {
	if len(b) < EthernetHeaderLen {
		return nil, errEthernetShort
	}
	return Ethernet(b), nil
}

// Destination returns the destination MAC address (bytes 0-5).
func (h Ethernet) Destination() MAC { return MAC(h[0:6]) }

// Source returns the source MAC address (bytes 6-11).
func (h Ethernet) Source() MAC { return MAC(h[6:12]) }

// EtherType returns bytes 12-13: the EtherType of the payload, or an IEEE
// 802.3 length when below EtherTypeMin.
func (h Ethernet) EtherType() uint16 { return binary.BigEndian.Uint16(h[12:14]) }

// Payload returns the bytes after the header. The returned slice aliases h.
func (h Ethernet) Payload() []byte { return h[EthernetHeaderLen:] }

// SetDestination writes the destination MAC address.
func (h Ethernet) SetDestination(m MAC) { copy(h[0:6], m[:]) }

// SetSource writes the source MAC address.
func (h Ethernet) SetSource(m MAC) { copy(h[6:12], m[:]) }

// SetEtherType writes the EtherType.
func (h Ethernet) SetEtherType(t uint16) { binary.BigEndian.PutUint16(h[12:14], t) }

// Encode writes the header from f into h[:EthernetHeaderLen]. It does not
// allocate.
func (h Ethernet) Encode(f *EthernetFields) {
	_ = h[EthernetHeaderLen-1]
	copy(h[0:6], f.Destination[:])
	copy(h[6:12], f.Source[:])
	binary.BigEndian.PutUint16(h[12:14], f.EtherType)
}

// VLAN is a view of an IEEE 802.1Q (or 802.1ad) tag as it follows the
// EtherType that announced it (EtherTypeVLAN or EtherTypeQinQ): the Tag
// Control Information and the EtherType of what comes next.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| PCP |D|        VLAN ID        |           EtherType           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// PCP is the priority code point (IEEE 802.1p), D the drop eligible
// indicator. Its methods assume at least VLANTagLen bytes, as ParseVLAN
// checks. The kernel's struct vlan_hdr has the same layout.
type VLAN []byte

// VLANFields holds the fields VLAN.Encode writes.
type VLANFields struct {
	Priority     uint8  // PCP, low 3 bits used
	DropEligible bool   // DEI
	ID           uint16 // VLAN identifier, low 12 bits used; 0 means priority tag only, 0xfff is reserved
	EtherType    uint16 // EtherType of the encapsulated payload
}

// ParseVLAN checks that b holds a VLAN tag and returns it as a VLAN view. It
// returns a *ParseError wrapping ErrTruncated when b is shorter than
// VLANTagLen. The returned view aliases b.
func ParseVLAN(b []byte) (VLAN, error) {
	if len(b) < VLANTagLen {
		return nil, errVLANShort
	}
	return VLAN(b), nil
}

// TCI returns the Tag Control Information, bytes 0-1 (the kernel's
// vlan_tci).
func (h VLAN) TCI() uint16 { return binary.BigEndian.Uint16(h[0:2]) }

// Priority returns the 3-bit priority code point.
func (h VLAN) Priority() uint8 { return h[0] >> 5 }

// DropEligible returns the drop eligible indicator bit.
func (h VLAN) DropEligible() bool { return h[0]&0x10 != 0 }

// ID returns the 12-bit VLAN identifier.
func (h VLAN) ID() uint16 { return h.TCI() & 0x0fff }

// EtherType returns the EtherType of the encapsulated payload, bytes 2-3.
func (h VLAN) EtherType() uint16 { return binary.BigEndian.Uint16(h[2:4]) }

// Payload returns the bytes after the tag. The returned slice aliases h.
func (h VLAN) Payload() []byte { return h[VLANTagLen:] }

// SetTCI writes the Tag Control Information.
func (h VLAN) SetTCI(tci uint16) { binary.BigEndian.PutUint16(h[0:2], tci) }

// SetPriority writes the low 3 bits of p as the priority code point.
func (h VLAN) SetPriority(p uint8) { h[0] = h[0]&0x1f | p<<5 }

// SetDropEligible writes the drop eligible indicator bit.
func (h VLAN) SetDropEligible(d bool) {
	h[0] &^= 0x10
	if d {
		h[0] |= 0x10
	}
}

// SetID writes the low 12 bits of id as the VLAN identifier.
func (h VLAN) SetID(id uint16) { h.SetTCI(h.TCI()&0xf000 | id&0x0fff) }

// SetEtherType writes the encapsulated EtherType.
func (h VLAN) SetEtherType(t uint16) { binary.BigEndian.PutUint16(h[2:4], t) }

// Encode writes the tag from f into h[:VLANTagLen].
func (h VLAN) Encode(f *VLANFields) {
	tci := uint16(f.Priority&7)<<13 | f.ID&0x0fff
	if f.DropEligible {
		tci |= 0x1000
	}
	_ = h[VLANTagLen-1]
	binary.BigEndian.PutUint16(h[0:2], tci)
	binary.BigEndian.PutUint16(h[2:4], f.EtherType)
}
