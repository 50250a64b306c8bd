//go:build linux

package xsk

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// descSize is the size of struct xdp_desc in bytes.
const descSize = uint64(unsafe.Sizeof(unix.XDPDesc{}))

// registerUMEM passes struct xdp_umem_reg to setsockopt(XDP_UMEM_REG).
func (s *Socket) registerUMEM(mem []byte, chunkSize, headroom uint32) error {
	reg := unix.XDPUmemReg{
		Addr:     uint64(uintptr(unsafe.Pointer(&mem[0]))),
		Len:      uint64(len(mem)),
		Size:     chunkSize,
		Headroom: headroom,
	}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if e != 0 {
		return e
	}
	return nil
}

// mmapOffsets reads struct xdp_mmap_offsets (getsockopt XDP_MMAP_OFFSETS).
func (s *Socket) mmapOffsets() (*unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	n := uint32(unsafe.Sizeof(off))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return nil, e
	}
	if n != uint32(unsafe.Sizeof(off)) {
		// A kernel older than 5.4 has no flags words: not supported.
		return nil, unix.ENOPROTOOPT
	}
	return &off, nil
}

// statistics reads struct xdp_statistics (getsockopt XDP_STATISTICS).
func (s *Socket) statistics() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	n := uint32(unsafe.Sizeof(st))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return st, e
	}
	return st, nil
}

// setWords points r's producer, consumer and flags at their words in r.mem.
func setWords(r *ring, o *unix.XDPRingOffset) {
	r.producer = (*uint32)(unsafe.Pointer(&r.mem[o.Producer]))
	r.consumer = (*uint32)(unsafe.Pointer(&r.mem[o.Consumer]))
	r.flags = (*uint32)(unsafe.Pointer(&r.mem[o.Flags]))
}

// addrSlice returns the uint64 entries of a fill or completion ring.
func addrSlice(r *ring, o *unix.XDPRingOffset) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&r.mem[o.Desc])), r.size)
}

// descSlice returns the xdp_desc entries of an rx or tx ring.
func descSlice(r *ring, o *unix.XDPRingOffset) []unix.XDPDesc {
	return unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&r.mem[o.Desc])), r.size)
}
