//go:build linux

package afxdp

import (
	"unsafe"

	"github.com/skbdev/skb/skb"
)

// headAddr returns the UMEM offset of b's block, b being a buffer of the
// UMEM's pool: what b.HeadAddr returns, computed from the header's own
// pointer to the block rather than read from the block's shared info. A
// buffer just taken from the pool has a hot header but, more often than
// not, a cold shared info (another cache line, written only as stores);
// reading the address from it was a cache miss per frame that took most of
// the receiver's refill time.
func (d *Device) headAddr(b *skb.Buff) uint64 {
	return uint64(baseOf(b.Head()) - d.umemBase)
}

// baseOf returns the address of mem's first byte.
func baseOf(mem []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(mem))) }
