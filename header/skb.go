package header

import (
	"encoding/binary"
	"fmt"

	"github.com/skbdev/skb/skb"
)

// ChecksumBuff returns the 16-bit ones' complement sum, as Checksum computes
// it, of n bytes of b starting off bytes after the start of its data, added
// to initial. It walks the linear data, then the page frags, then the frag
// list (each member's linear data, frags and frag list in turn), chaining
// pieces of any length and alignment as ChecksumBlockAdd does, so the
// result is the sum of the same bytes made contiguous. It follows the
// kernel's skb_checksum.
//
// It returns skb.ErrRange when off or n is negative or off+n exceeds
// b.Len(). ChecksumBuff does not take ownership of b and does not keep it;
// it only reads. It does not allocate.
func ChecksumBuff(b *skb.Buff, off, n int, initial uint16) (uint16, error) {
	if off < 0 || n < 0 || off > b.Len()-n {
		return 0, skb.ErrRange
	}
	s, _ := sumBuff(b, off, n, initial, 0)
	return s, nil
}

// sumBuff adds n bytes of b from off (all inside b) to sum. pos counts the
// bytes summed before, whose parity places the next byte in its word. It
// returns the sum and the new pos.
func sumBuff(b *skb.Buff, off, n int, sum uint16, pos int) (uint16, int) {
	d := b.Data()
	if off < len(d) {
		k := min(n, len(d)-off)
		sum = ChecksumBlockAdd(sum, Checksum(d[off:off+k], 0), pos)
		pos, n, off = pos+k, n-k, 0
	} else {
		off -= len(d)
	}
	for _, f := range b.Frags() {
		if n == 0 {
			return sum, pos
		}
		fb := f.Bytes()
		if off < len(fb) {
			k := min(n, len(fb)-off)
			sum = ChecksumBlockAdd(sum, Checksum(fb[off:off+k], 0), pos)
			pos, n, off = pos+k, n-k, 0
		} else {
			off -= len(fb)
		}
	}
	for c := b.FragList(); c != nil && n > 0; c = c.Next() {
		cl := c.Len()
		if off < cl {
			k := min(n, cl-off)
			sum, pos = sumBuff(c, off, k, sum, pos)
			n, off = n-k, 0
		} else {
			off -= cl
		}
	}
	return sum, pos
}

// FinishChecksumBuff completes the checksum of a CHECKSUM_PARTIAL buffer in
// software, as the kernel's skb_checksum_help does before handing a packet
// to a device without checksum offload: it sums b from CsumStart to the end,
// page frags and frag list included, stores the complement of the folded
// sum at CsumStart+CsumOffset (0 stored as 0xffff, as FinishChecksum does)
// and sets the state to skb.ChecksumNone. The checksum field must hold the
// pseudo-header sum, as CHECKSUM_PARTIAL requires.
//
// A buffer in any other state is left alone and FinishChecksumBuff returns
// nil: there is nothing to finish. It returns ErrGSO for a GSO buffer, and
// ErrBadChecksumOffset when csum_start is not in the linear data or the
// 2-byte field does not end inside it (as after a Pull past csum_start).
// When b's data is shared (b.Cloned), it first makes the linear data
// private with b.CowHead(a, 0), as skb_ensure_writable does; the frags stay
// shared and are only read (unless the head cannot grow in a's classes, when
// CowHead copies the packet whole into linear data). It returns ErrCloned
// when a is nil then, and
// CowHead's error wrapped when that fails. On error b is unchanged.
//
// FinishChecksumBuff does not take ownership of b. It does not allocate
// unless b is cloned.
func FinishChecksumBuff(b *skb.Buff, a skb.Allocator) error {
	if b.IPSummed() != skb.ChecksumPartial {
		return nil
	}
	if b.IsGSO() {
		return ErrGSO
	}
	start, off, hl := b.CsumStart(), b.CsumOffset(), b.HeadLen()
	if start < 0 || off < 0 || start >= hl || off > hl-start-2 {
		return ErrBadChecksumOffset
	}
	if b.Cloned() {
		if a == nil {
			return ErrCloned
		}
		if err := b.CowHead(a, 0); err != nil {
			return fmt.Errorf("header: finish checksum: %w", err)
		}
	}
	s, _ := sumBuff(b, start, b.Len()-start, 0, 0)
	c := ^s
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(b.Data()[start+off:], c)
	b.SetChecksumNone()
	return nil
}

// ParseFrameBuff is ParseFrame for a received buffer whose data starts at
// the Ethernet header. The headers must lie in b's linear data; length
// fields are checked against b.Len(), so a head-split buffer (headers in the
// linear part, payload in page frags, as a driver receives with head-split
// on) parses. A header that lies partly in the paged part is reported as a
// *ParseError wrapping ErrTruncated with layer "frame": PskbMayPull it into
// the linear data first.
//
// On success it marks b's mac header at the start of the data, its network
// header at f.NetworkOffset, its transport header at f.TransportOffset when
// there is one, and sets its protocol to f.EtherType, as the kernel's
// eth_type_trans and ip_rcv_core do; it does not pull the mac header, trim b
// to f.End (PskbTrim does) or verify checksums (VerifyChecksumBuff does). On
// error b is unchanged. ParseFrameBuff does not take ownership of b and does
// not allocate.
func ParseFrameBuff(b *skb.Buff) (Frame, error) {
	var f Frame
	err := parseFrame(b.Data(), b.Len(), &f)
	if err == nil {
		setHeaders(b, &f)
	}
	return f, err
}

// ParsePacketBuff is ParsePacket for a received buffer whose data starts
// at an IPv4 or IPv6 header (a TUN device), with the linear-data rule,
// header marks and protocol of ParseFrameBuff; the mac header is marked at
// the network header (no link header, as tun_get_user does). It does not take
// ownership of b and does not keep it after returning.
func ParsePacketBuff(b *skb.Buff) (Frame, error) {
	f, err := parsePacket(b.Data(), b.Len())
	if err == nil {
		setHeaders(b, &f)
	}
	return f, err
}

func setHeaders(b *skb.Buff, f *Frame) {
	b.ResetMacHeader()
	b.SetNetworkHeader(f.NetworkOffset)
	if f.TransportOffset != 0 {
		b.SetTransportHeader(f.TransportOffset)
	}
	b.SetProtocol(f.EtherType)
}

// VerifyChecksumBuff is VerifyChecksum for the buffer f was parsed from by
// ParseFrameBuff or ParsePacketBuff, unchanged since: the transport checksum
// covers the linear data, the page frags and the frag list. It returns
// skb.ErrRange when f's offsets lie past b's length or its linear data, and
// a *ParseError wrapping ErrTruncated when the headers there do not fit
// what f says of them (f from a failed parse, or b changed since). It does not use a CHECKSUM_COMPLETE
// sum the buffer may carry, and does not change the checksum state: a
// caller that wants to remember success calls b.SetChecksumUnnecessary.
// It does not take ownership of b and does not allocate.
func (f *Frame) VerifyChecksumBuff(b *skb.Buff) error {
	if f.End > b.Len() || f.PayloadOffset > b.HeadLen() || f.TransportOffset > b.HeadLen() {
		return skb.ErrRange
	}
	return f.verify(b.Data(), b)
}
