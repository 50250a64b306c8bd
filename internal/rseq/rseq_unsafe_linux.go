package rseq

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeArea holds the probe's struct rseq: a global, so that it stays
// valid while a probe thread has it registered; 32-byte aligned within it.
var probeArea [2 * probeLen]byte

// probeAddr returns the 32-byte aligned address of the probe's struct
// rseq inside probeArea.
func probeAddr() uintptr {
	p := uintptr(unsafe.Pointer(&probeArea[0]))
	if off := p % probeLen; off != 0 {
		p += probeLen - off
	}
	return p
}

// rseqCall makes rseq(2) with the probe's struct at p, its length and
// signature, and flags, and returns the errno (0 on success).
func rseqCall(p uintptr, flags int) unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_RSEQ, p, probeLen, uintptr(flags), probeSig, 0, 0)
	return e
}
