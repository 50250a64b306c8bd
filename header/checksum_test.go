package header

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// checksumRef is the plain RFC 1071 loop: add big-endian 16-bit words into a
// 32-bit accumulator, pad an odd byte with zero, fold.
func checksumRef(b []byte, initial uint16) uint16 {
	s := uint32(initial)
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestChecksumRFC1071Example(t *testing.T) {
	// RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	if got := Checksum(b, 0); got != 0xddf2 {
		t.Fatalf("Checksum = %#04x, want 0xddf2", got)
	}
}

func TestChecksumEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		b       []byte
		initial uint16
		want    uint16
	}{
		{"empty", nil, 0, 0},
		{"empty initial", nil, 0x1234, 0x1234},
		{"one byte", []byte{0xab}, 0, 0xab00},
		{"three bytes", []byte{0x01, 0x02, 0x03}, 0, 0x0102 + 0x0300},
		{"all zero", make([]byte, 100), 0, 0},
		{"all ones", []byte{0xff, 0xff, 0xff, 0xff}, 0, 0xffff},
		{"carry", []byte{0xff, 0xff, 0x00, 0x01}, 0, 0x0001},
		{"initial carry", []byte{0x00, 0x02}, 0xffff, 0x0002},
		{"ones 64", bytesOf(0xff, 64), 0, 0xffff},
		{"ones 9000", bytesOf(0xff, 9000), 0, 0xffff},
		{"ones 9001", bytesOf(0xff, 9001), 0, 0xff00 + 0xffff - 0xffff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Checksum(tt.b, tt.initial); got != tt.want {
				t.Errorf("Checksum = %#04x, want %#04x", got, tt.want)
			}
			if got := checksumRef(tt.b, tt.initial); got != tt.want {
				t.Errorf("checksumRef = %#04x, want %#04x (bad test)", got, tt.want)
			}
		})
	}
}

func bytesOf(v byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = v
	}
	return b
}

func TestChecksumMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := randBytes(r, 10000)
	for n := 0; n <= 300; n++ {
		for _, off := range []int{0, 1, 3, 8} {
			b := buf[off : off+n]
			initial := uint16(r.Uint32())
			if got, want := Checksum(b, initial), checksumRef(b, initial); got != want {
				t.Fatalf("len %d off %d: Checksum = %#04x, reference %#04x", n, off, got, want)
			}
		}
	}
	for range 200 {
		n := r.IntN(len(buf))
		b := buf[:n]
		if got, want := Checksum(b, 0), checksumRef(b, 0); got != want {
			t.Fatalf("len %d: Checksum = %#04x, reference %#04x", n, got, want)
		}
	}
	// Sums that stress the carry chain: long runs of 0xff.. with a few
	// other bytes.
	b := bytesOf(0xff, 4096)
	for i := range 50 {
		b[r.IntN(len(b))] = byte(i)
		if got, want := Checksum(b, 0xffff), checksumRef(b, 0xffff); got != want {
			t.Fatalf("ones run %d: Checksum = %#04x, reference %#04x", i, got, want)
		}
	}
}

// TestChecksumChaining splits data at every point, odd and even, and
// chains the pieces with ChecksumBlockAdd.
func TestChecksumChaining(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 7, 63, 64, 65, 257, 1500} {
		b := randBytes(r, n)
		want := Checksum(b, 0)
		for i := 0; i <= n; i++ {
			s := Checksum(b[:i], 0)
			s = ChecksumBlockAdd(s, Checksum(b[i:], 0), i)
			if s != want {
				t.Fatalf("len %d split %d: chained %#04x, whole %#04x", n, i, s, want)
			}
		}
		// Three pieces with two odd boundaries.
		if n >= 10 {
			i, j := 3, n-5
			s := Checksum(b[:i], 0)
			s = ChecksumBlockAdd(s, Checksum(b[i:j], 0), i)
			s = ChecksumBlockAdd(s, Checksum(b[j:], 0), j)
			if s != want {
				t.Fatalf("len %d three pieces: %#04x, whole %#04x", n, s, want)
			}
		}
	}
}

func TestChecksumCombineFold(t *testing.T) {
	tests := []struct{ a, b, want uint16 }{
		{0, 0, 0},
		{0xffff, 0, 0xffff},
		{0xffff, 0xffff, 0xffff},
		{0x8000, 0x8000, 0x0001},
		{0x1234, 0x4321, 0x5555},
	}
	for _, tt := range tests {
		if got := ChecksumCombine(tt.a, tt.b); got != tt.want {
			t.Errorf("ChecksumCombine(%#x, %#x) = %#x, want %#x", tt.a, tt.b, got, tt.want)
		}
	}
	folds := []struct {
		s    uint64
		want uint16
	}{
		{0, 0},
		{0xffff, 0xffff},
		{0x10000, 1},
		{0x1fffe, 0xffff},
		{0xffffffffffffffff, 0xffff},
		{0x0001000000000000, 1},
	}
	for _, tt := range folds {
		if got := ChecksumFold(tt.s); got != tt.want {
			t.Errorf("ChecksumFold(%#x) = %#x, want %#x", tt.s, got, tt.want)
		}
	}
}

// sameOnesComplement reports whether two checksum values are equal as ones'
// complement numbers (0 and 0xffff both mean zero).
func sameOnesComplement(a, b uint16) bool {
	return a == b || (a == 0 && b == 0xffff) || (a == 0xffff && b == 0)
}

func TestChecksumUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		b := randBytes(r, 40)
		binary.BigEndian.PutUint16(b[10:], 0)
		check := ^Checksum(b, 0)
		binary.BigEndian.PutUint16(b[10:], check)

		switch i % 3 {
		case 0: // a 16-bit field
			old := binary.BigEndian.Uint16(b[4:])
			nw := uint16(r.Uint32())
			binary.BigEndian.PutUint16(b[4:], nw)
			check = ChecksumUpdate16(check, old, nw)
		case 1: // a 32-bit field (an IPv4 address)
			old := binary.BigEndian.Uint32(b[12:])
			nw := r.Uint32()
			binary.BigEndian.PutUint32(b[12:], nw)
			check = ChecksumUpdate32(check, old, nw)
		case 2: // 16 bytes (an IPv6 address)
			old := append([]byte(nil), b[20:36]...)
			nw := randBytes(r, 16)
			copy(b[20:36], nw)
			check = ChecksumUpdateBytes(check, old, nw)
		}
		binary.BigEndian.PutUint16(b[10:], 0)
		want := ^Checksum(b, 0)
		if !sameOnesComplement(check, want) {
			t.Fatalf("case %d: incremental %#04x, recomputed %#04x", i, check, want)
		}
		binary.BigEndian.PutUint16(b[10:], check)
		if Checksum(b, 0) != 0xffff {
			t.Fatalf("case %d: header does not verify after update", i)
		}
	}
}

func TestChecksumUpdateBytesPanicsOnLengthMismatch(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	ChecksumUpdateBytes(0, make([]byte, 4), make([]byte, 16))
}

func TestPseudoHeaderChecksum(t *testing.T) {
	src4, dst4 := [4]byte{198, 18, 0, 1}, [4]byte{198, 18, 0, 2}
	// RFC 768: source, destination, zero, protocol, UDP length.
	ph := append(append(append([]byte{}, src4[:]...), dst4[:]...), 0, IPProtoUDP, 0x05, 0xdc)
	if got, want := PseudoHeaderChecksumIPv4(src4, dst4, IPProtoUDP, 1500), Checksum(ph, 0); got != want {
		t.Errorf("PseudoHeaderChecksumIPv4 = %#04x, want %#04x", got, want)
	}
	var src6, dst6 [16]byte
	for i := range 16 {
		src6[i], dst6[i] = byte(0xf0+i), byte(i*17)
	}
	// RFC 8200 section 8.1: source, destination, 32-bit length, three zero
	// bytes, next header.
	ph6 := append(append(append([]byte{}, src6[:]...), dst6[:]...), 0x00, 0x01, 0x00, 0x08, 0, 0, 0, IPProtoTCP)
	if got, want := PseudoHeaderChecksumIPv6(src6, dst6, IPProtoTCP, 0x10008), Checksum(ph6, 0); got != want {
		t.Errorf("PseudoHeaderChecksumIPv6 = %#04x, want %#04x", got, want)
	}
}

func TestFinishChecksum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	src, dst := [4]byte{198, 18, 0, 1}, [4]byte{198, 18, 0, 2}
	for _, n := range []int{0, 1, 17, 1472} {
		// 10 bytes of something before csum_start, then a UDP datagram.
		b := randBytes(r, 10+UDPHeaderLen+n)
		u := UDP(b[10:])
		u.Encode(&UDPFields{SourcePort: 1, DestinationPort: 2, Length: uint16(UDPHeaderLen + n)})
		pseudo := PseudoHeaderChecksumIPv4(src, dst, IPProtoUDP, uint16(UDPHeaderLen+n))
		want := u.ComputeChecksum(pseudo)
		u.SetChecksum(pseudo)
		if err := FinishChecksum(b, 10, 6); err != nil {
			t.Fatal(err)
		}
		if got := u.Checksum(); got != want {
			t.Errorf("payload %d: finished %#04x, full %#04x", n, got, want)
		}
		if !u.ChecksumValid(pseudo) {
			t.Errorf("payload %d: does not verify", n)
		}
	}
}

// TestFinishChecksumZero makes the data sum to 0xffff, whose complement 0
// must be stored as 0xffff.
func TestFinishChecksumZero(t *testing.T) {
	b := []byte{0x12, 0x34, 0x00, 0x00, 0xed, 0xcb} // 0x1234 + 0xedcb = 0xffff
	if err := FinishChecksum(b, 0, 2); err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint16(b[2:]); got != 0xffff {
		t.Fatalf("stored %#04x, want 0xffff", got)
	}
}

func TestFinishChecksumErrors(t *testing.T) {
	tests := []struct {
		name          string
		n, start, off int
	}{
		{"negative start", 20, -1, 6},
		{"negative offset", 20, 0, -1},
		{"start at end", 20, 20, 0},
		{"start past end", 20, 21, 0},
		{"field past end", 20, 10, 9},
		{"field straddles end", 20, 0, 19},
		{"empty", 0, 0, 0},
		{"huge offset", 20, 0, int(^uint(0) >> 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, tt.n)
			if err := FinishChecksum(b, tt.start, tt.off); !errors.Is(err, ErrBadChecksumOffset) {
				t.Fatalf("err = %v, want ErrBadChecksumOffset", err)
			}
		})
	}
	// The last field that fits.
	if err := FinishChecksum(make([]byte, 20), 10, 8); err != nil {
		t.Fatalf("field at the end: %v", err)
	}
}

// TestChecksumUpdateAddr rewrites the source address of random UDP and TCP
// segments over IPv4 and IPv6 and checks ChecksumUpdateAddr's field against
// the checksum computed afresh with the new pseudo-header; UDP's zero
// (absent) checksum stays zero and a zero result is stored as 0xffff; a
// change of family panics; and it allocates nothing.
func TestChecksumUpdateAddr(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	addr := func(v6 bool) netip.Addr {
		if v6 {
			var a [16]byte
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			a[0] = 0x20 // not IPv4-mapped
			return netip.AddrFrom16(a)
		}
		return netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())})
	}
	full := func(seg []byte, src, dst netip.Addr, proto uint8) uint16 {
		var p uint16
		if src.Is4() {
			p = PseudoHeaderChecksumIPv4(src.As4(), dst.As4(), proto, uint16(len(seg)))
		} else {
			p = PseudoHeaderChecksumIPv6(src.As16(), dst.As16(), proto, uint32(len(seg)))
		}
		return ^Checksum(seg, p) // the field zero in seg
	}
	for i := range 2000 {
		v6, udp := i&1 == 1, i&2 == 2
		proto, off := IPProtoTCP, 16
		if udp {
			proto, off = IPProtoUDP, 6
		}
		seg := make([]byte, 20+r.IntN(200))
		for j := range seg {
			seg[j] = byte(r.Uint32())
		}
		seg[off], seg[off+1] = 0, 0
		src, dst, src2 := addr(v6), addr(v6), addr(v6)
		check := full(seg, src, dst, proto)
		if udp && check == 0 {
			check = 0xffff
		}
		got := ChecksumUpdateAddr(check, src, src2, udp)
		want := full(seg, src2, dst, proto)
		if !sameOnesComplement(got, want) || udp && got == 0 {
			t.Fatalf("segment %d (v6 %v, udp %v): %v -> %v: field %#04x, afresh %#04x", i, v6, udp, src, src2, got, want)
		}
	}
	a4, b4 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	if got := ChecksumUpdateAddr(0, a4, b4, true); got != 0 {
		t.Errorf("UDP without a checksum: %#04x, want 0", got)
	}
	// A field whose update comes to zero: UDP stores 0xffff, TCP zero.
	// 198.18.0.1 -> 198.18.0.2 adds 1 to the sum, so ~field goes from
	// 0xfffe to 0xffff, the field from 0x0001 to 0x0000.
	if got := ChecksumUpdateAddr(1, a4, b4, true); got != 0xffff {
		t.Errorf("UDP field updated to zero: %#04x, want 0xffff", got)
	}
	if got := ChecksumUpdateAddr(1, a4, b4, false); got != 0 {
		t.Errorf("TCP field updated to zero: %#04x, want 0", got)
	}
	mapped := netip.AddrFrom16(b4.As16())
	if got := ChecksumUpdateAddr(1, a4, mapped, false); got != 0 {
		t.Errorf("to an IPv4-mapped address: %#04x, want it taken as IPv4 (0)", got)
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("ChecksumUpdateAddr from IPv4 to IPv6 did not panic")
			}
		}()
		ChecksumUpdateAddr(1, a4, netip.MustParseAddr("2001:db8::1"), false)
	}()
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("ChecksumUpdateAddr of a UDP field of 0 from the zero Addr did not panic")
			}
		}()
		ChecksumUpdateAddr(0, netip.Addr{}, a4, true)
	}()
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	if n := testing.AllocsPerRun(100, func() {
		sink16 += ChecksumUpdateAddr(0x1234, a4, b4, true) + ChecksumUpdateAddr(0x1234, v6a, v6b, false)
	}); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

var sink16 uint16
