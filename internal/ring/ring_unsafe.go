package ring

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// word returns a pointer to the aligned 32-bit word at b[off:off+4]. It panics
// when the word is outside b or misaligned: an offset into a ring is computed
// by the driver from the geometry it chose, so a bad one is a programmer error.
func word(b []byte, off int) *uint32 {
	if off < 0 || off > len(b)-4 {
		panic(fmt.Sprintf("ring: word at offset %d outside %d bytes", off, len(b)))
	}
	p := unsafe.Pointer(unsafe.SliceData(b[off:]))
	if uintptr(p)&3 != 0 {
		panic(fmt.Sprintf("ring: word at offset %d (address %#x) is not 4-byte aligned", off, uintptr(p)))
	}
	return (*uint32)(p)
}

// Load32 returns the native-endian 32-bit word at b[off:off+4] with acquire
// order: reads of the ring made after it see everything the writer stored
// before it released the word (smp_load_acquire). It panics if the word is
// outside b or not 4-byte aligned.
func Load32(b []byte, off int) uint32 { return atomic.LoadUint32(word(b, off)) }

// Store32 stores v as the native-endian 32-bit word at b[off:off+4] with
// release order: the other side, once it sees v, also sees every write made
// to the ring before the store (smp_store_release). It panics if the word is
// outside b or not 4-byte aligned.
func Store32(b []byte, off int, v uint32) { atomic.StoreUint32(word(b, off), v) }
