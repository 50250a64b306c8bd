package traffic

import "encoding/binary"

// StampMagic marks a payload as written by Pktgen or PingPong: the value of
// the kernel pktgen's PKTGEN_MAGIC (net/core/pktgen.c), so that the two are
// easy to tell apart from other traffic in a capture.
const StampMagic = 0xbe9be955

// StampLen is the length of a Stamp on the wire, in bytes, and so the
// smallest payload the engines send.
const StampLen = 28

// Stamp is the header the generator writes at the front of every UDP
// payload, in network byte order:
//
//	offset  size  field
//	0       4     magic   StampMagic
//	4       4     run     random, one value per generator run
//	8       4     flow    flow number, from 0
//	12      8     seq     per-flow sequence number, from 0
//	20      8     tstamp  send time, ns since the Unix epoch (CLOCK_REALTIME); 0: none
//
// The kernel's pktgen writes magic, a 32-bit sequence number and a
// timeval (struct pktgen_hdr); Stamp widens the sequence number and the
// time so that neither wraps, and adds the run and the flow so that a sink
// can keep per-flow state and tell two runs apart.
type Stamp struct {
	Run    uint32
	Flow   uint32
	Seq    uint64
	Tstamp int64
}

// PutStamp writes s at the front of b. It panics if b is shorter than
// StampLen. It does not allocate.
func PutStamp(b []byte, s Stamp) {
	_ = b[StampLen-1]
	binary.BigEndian.PutUint32(b[0:4], StampMagic)
	binary.BigEndian.PutUint32(b[4:8], s.Run)
	binary.BigEndian.PutUint32(b[8:12], s.Flow)
	binary.BigEndian.PutUint64(b[12:20], s.Seq)
	binary.BigEndian.PutUint64(b[20:28], uint64(s.Tstamp))
}

// ParseStamp reads the Stamp at the front of b. It reports false when b is
// shorter than StampLen or does not start with StampMagic. It does not keep
// b and does not allocate.
func ParseStamp(b []byte) (Stamp, bool) {
	if len(b) < StampLen || binary.BigEndian.Uint32(b[0:4]) != StampMagic {
		return Stamp{}, false
	}
	return Stamp{
		Run:    binary.BigEndian.Uint32(b[4:8]),
		Flow:   binary.BigEndian.Uint32(b[8:12]),
		Seq:    binary.BigEndian.Uint64(b[12:20]),
		Tstamp: int64(binary.BigEndian.Uint64(b[20:28])),
	}, true
}
