package header

import (
	"encoding/binary"
	"fmt"
)

// ARP constants, RFC 826 and the IANA "arp-parameters" registry.
const (
	// ARPHeaderLen is the length of the fixed part of an ARP packet,
	// before the four addresses.
	ARPHeaderLen = 8

	// ARPIPv4Len is the length of an ARP packet for IPv4 over Ethernet
	// (6-byte hardware and 4-byte protocol addresses): 28 bytes.
	ARPIPv4Len = ARPHeaderLen + 2*6 + 2*4

	ARPHardwareEthernet uint16 = 1 // hardware type Ethernet (10Mb), RFC 826
	ARPRequest          uint16 = 1 // operation: request, RFC 826
	ARPReply            uint16 = 2 // operation: reply, RFC 826
)

// ARP is a view of an Address Resolution Protocol packet (RFC 826):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Hardware type         |         Protocol type         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  HW addr len  | Proto addr len|           Operation           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Sender hardware address (HW addr len bytes)                  ...
//	| Sender protocol address (Proto addr len bytes)               ...
//	| Target hardware address (HW addr len bytes)                  ...
//	| Target protocol address (Proto addr len bytes)               ...
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// For IPv4 over Ethernet the address lengths are 6 and 4 and the packet is
// ARPIPv4Len bytes. The fixed-field methods assume ARPHeaderLen bytes and
// the address methods the whole packet, as ParseARP checks.
type ARP []byte

// ARPFields holds the fields ARP.Encode writes. The address lengths come
// from the slices: both hardware addresses must have one length (at most
// 255) and both protocol addresses another.
type ARPFields struct {
	HardwareType       uint16 // such as ARPHardwareEthernet
	ProtocolType       uint16 // an EtherType, such as EtherTypeIPv4
	Op                 uint16 // ARPRequest or ARPReply
	SenderHardwareAddr []byte
	SenderProtocolAddr []byte
	TargetHardwareAddr []byte
	TargetProtocolAddr []byte
}

// Len returns the length in bytes of the packet f describes.
func (f *ARPFields) Len() int {
	return ARPHeaderLen + 2*len(f.SenderHardwareAddr) + 2*len(f.SenderProtocolAddr)
}

// ParseARP checks that b holds an ARP packet whose four addresses, of the
// lengths its header gives, are all present, and returns it as an ARP view
// trimmed to its length (what follows, such as Ethernet padding, is dropped).
// It returns a *ParseError wrapping ErrTruncated otherwise. It does not
// check the hardware or protocol type. The returned view aliases b.
func ParseARP(b []byte) (ARP, error) {
	n, err := checkARP(b, len(b))
	if err != nil {
		return nil, err
	}
	return ARP(b[:n]), nil
}

// checkARP makes ParseARP's checks on b, the first bytes of a packet of
// avail bytes: the whole ARP packet must lie in b. It returns its length.
func checkARP(b []byte, avail int) (int, error) {
	if len(b) < ARPHeaderLen {
		return 0, short(ARPHeaderLen, avail, errARPShort)
	}
	n := ARPHeaderLen + 2*int(b[4]) + 2*int(b[5])
	if len(b) < n {
		return 0, short(n, avail, errARPAddresses)
	}
	return n, nil
}

// HardwareType returns bytes 0-1, the hardware address space.
func (h ARP) HardwareType() uint16 { return binary.BigEndian.Uint16(h[0:2]) }

// ProtocolType returns bytes 2-3, the EtherType of the protocol address.
func (h ARP) ProtocolType() uint16 { return binary.BigEndian.Uint16(h[2:4]) }

// HardwareLen returns byte 4, the hardware address length in bytes.
func (h ARP) HardwareLen() int { return int(h[4]) }

// ProtocolLen returns byte 5, the protocol address length in bytes.
func (h ARP) ProtocolLen() int { return int(h[5]) }

// Op returns bytes 6-7, the operation (ARPRequest, ARPReply).
func (h ARP) Op() uint16 { return binary.BigEndian.Uint16(h[6:8]) }

// IsEthernetIPv4 reports whether h resolves IPv4 addresses to Ethernet
// addresses: hardware type 1, protocol type 0x0800, lengths 6 and 4, the only
// kind the kernel's arp_rcv accepts on an Ethernet device.
func (h ARP) IsEthernetIPv4() bool {
	return h.HardwareType() == ARPHardwareEthernet && h.ProtocolType() == EtherTypeIPv4 &&
		h[4] == 6 && h[5] == 4
}

// SenderHardwareAddr returns the sender hardware address. The returned
// slice aliases h.
func (h ARP) SenderHardwareAddr() []byte {
	o := ARPHeaderLen
	return h[o : o+int(h[4])]
}

// SenderProtocolAddr returns the sender protocol address. The returned
// slice aliases h.
func (h ARP) SenderProtocolAddr() []byte {
	o := ARPHeaderLen + int(h[4])
	return h[o : o+int(h[5])]
}

// TargetHardwareAddr returns the target hardware address. The returned
// slice aliases h.
func (h ARP) TargetHardwareAddr() []byte {
	o := ARPHeaderLen + int(h[4]) + int(h[5])
	return h[o : o+int(h[4])]
}

// TargetProtocolAddr returns the target protocol address. The returned
// slice aliases h.
func (h ARP) TargetProtocolAddr() []byte {
	o := ARPHeaderLen + 2*int(h[4]) + int(h[5])
	return h[o : o+int(h[5])]
}

// SetHardwareType writes the hardware type.
func (h ARP) SetHardwareType(t uint16) { binary.BigEndian.PutUint16(h[0:2], t) }

// SetProtocolType writes the protocol type.
func (h ARP) SetProtocolType(t uint16) { binary.BigEndian.PutUint16(h[2:4], t) }

// SetOp writes the operation.
func (h ARP) SetOp(op uint16) { binary.BigEndian.PutUint16(h[6:8], op) }

// SetSenderHardwareAddr copies a into the sender hardware address. It
// panics when len(a) is not HardwareLen (a programming error); the lengths
// are set with Encode.
func (h ARP) SetSenderHardwareAddr(a []byte) { setAddr(h.SenderHardwareAddr(), a) }

// SetSenderProtocolAddr copies a into the sender protocol address, as
// SetSenderHardwareAddr.
func (h ARP) SetSenderProtocolAddr(a []byte) { setAddr(h.SenderProtocolAddr(), a) }

// SetTargetHardwareAddr copies a into the target hardware address, as
// SetSenderHardwareAddr.
func (h ARP) SetTargetHardwareAddr(a []byte) { setAddr(h.TargetHardwareAddr(), a) }

// SetTargetProtocolAddr copies a into the target protocol address, as
// SetSenderHardwareAddr.
func (h ARP) SetTargetProtocolAddr(a []byte) { setAddr(h.TargetProtocolAddr(), a) }

func setAddr(dst, a []byte) {
	if len(a) != len(dst) {
		panic(fmt.Sprintf("header: ARP: address of %d bytes where the header says %d", len(a), len(dst)))
	}
	copy(dst, a)
}

// Encode writes the packet f describes into h[:f.Len()], lengths included.
// It panics, with the lengths in the message, when the two hardware or the
// two protocol addresses differ in length or a length exceeds 255: that is
// a programming error, not bad input.
func (h ARP) Encode(f *ARPFields) {
	hl, pl := len(f.SenderHardwareAddr), len(f.SenderProtocolAddr)
	if hl != len(f.TargetHardwareAddr) || pl != len(f.TargetProtocolAddr) || hl > 255 || pl > 255 {
		panic(fmt.Sprintf("header: ARP.Encode: address lengths sender %d/%d target %d/%d",
			hl, pl, len(f.TargetHardwareAddr), len(f.TargetProtocolAddr)))
	}
	_ = h[f.Len()-1]
	binary.BigEndian.PutUint16(h[0:2], f.HardwareType)
	binary.BigEndian.PutUint16(h[2:4], f.ProtocolType)
	h[4], h[5] = uint8(hl), uint8(pl)
	binary.BigEndian.PutUint16(h[6:8], f.Op)
	o := ARPHeaderLen
	o += copy(h[o:], f.SenderHardwareAddr)
	o += copy(h[o:], f.SenderProtocolAddr)
	o += copy(h[o:], f.TargetHardwareAddr)
	copy(h[o:], f.TargetProtocolAddr)
}
