package traffic

import "encoding/binary"

// StampMagic marks a payload as written by Pktgen or PingPong: the value of
// the kernel pktgen's PKTGEN_MAGIC (net/core/pktgen.c), so that the two are
// easy to tell apart from other traffic in a capture.
const StampMagic = 0xbe9be955

// StampLen is the length of a Stamp on the wire, in bytes, and so the
// smallest payload the engines send.
const StampLen = 32

// Stamp is the header the generator writes at the front of every UDP
// payload, in network byte order:
//
//	offset  size  field
//	0       4     magic   StampMagic
//	4       4     run     random, one value per generator run
//	8       4     flow    flow number, from 0
//	12      8     seq     per-flow sequence number, from 0
//	20      8     tstamp  send time, ns since the Unix epoch (CLOCK_REALTIME); 0: none
//	28      4     check   a hash of bytes 4 to 28 (see PutStamp)
//
// The kernel's pktgen writes magic, a 32-bit sequence number and a
// timeval (struct pktgen_hdr); Stamp widens the sequence number and the
// time so that neither wraps, and adds the run and the flow so that a sink
// can keep per-flow state and tell two runs apart, and the check, so that
// a stamp corrupted on the way is not counted: a bit flipped in its run,
// flow or sequence number would make a flow of its own, or a jump of
// billions, and no checksum catches it where the receiver does not verify
// UDP checksums (AF_XDP) or trusts a device's offload.
type Stamp struct {
	Run    uint32
	Flow   uint32
	Seq    uint64
	Tstamp int64
}

// PutStamp writes s at the front of b, with its check. It panics if b is
// shorter than StampLen. It does not allocate.
func PutStamp(b []byte, s Stamp) {
	_ = b[StampLen-1]
	binary.BigEndian.PutUint32(b[0:4], StampMagic)
	binary.BigEndian.PutUint32(b[4:8], s.Run)
	binary.BigEndian.PutUint32(b[8:12], s.Flow)
	binary.BigEndian.PutUint64(b[12:20], s.Seq)
	binary.BigEndian.PutUint64(b[20:28], uint64(s.Tstamp))
	binary.BigEndian.PutUint32(b[28:32], s.check())
}

// ParseStamp reads the Stamp at the front of b. It reports false when b is
// shorter than StampLen, does not start with StampMagic, or its check does
// not match its fields (a corrupt stamp). It does not keep b and does not
// allocate.
func ParseStamp(b []byte) (Stamp, bool) {
	if len(b) < StampLen || binary.BigEndian.Uint32(b[0:4]) != StampMagic {
		return Stamp{}, false
	}
	s := Stamp{
		Run:    binary.BigEndian.Uint32(b[4:8]),
		Flow:   binary.BigEndian.Uint32(b[8:12]),
		Seq:    binary.BigEndian.Uint64(b[12:20]),
		Tstamp: int64(binary.BigEndian.Uint64(b[20:28])),
	}
	if binary.BigEndian.Uint32(b[28:32]) != s.check() {
		return Stamp{}, false
	}
	return s, true
}

// stampSeed starts the check, so that a stamp of zeros (magic, then 28
// zero bytes) does not pass it: the mix maps 0 to 0.
const stampSeed = 0x5bd1e9955bd1e995

// check is the stamp's check: its fields multiplied by odd constants (each
// a bijection, so that a changed field changes their exclusive or), mixed
// as SplitMix64's finalizer does, folded to 32 bits. A flipped bit of the
// check itself is always seen; one of the fields goes unseen with a chance
// of about 2^-32.
func (s Stamp) check() uint32 {
	h := (uint64(s.Run)<<32|uint64(s.Flow))*0x9e3779b97f4a7c15 ^ s.Seq*0xc2b2ae3d27d4eb4f ^ uint64(s.Tstamp)*0x165667b19e3779f9 ^ stampSeed
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return uint32(h) ^ uint32(h>>32)
}
