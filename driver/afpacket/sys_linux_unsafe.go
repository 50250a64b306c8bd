//go:build linux

package afpacket

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/mmsg"
)

// The doorbells are raw system calls: the runtime is not told that the
// thread is in a system call. A sendmmsg of a 64-frame batch runs for a
// couple of hundred microseconds in the kernel (transmit and, on veth, the
// receive side too), longer than the 20 µs after which the runtime's
// monitor takes the P from a thread in a system call; it then keeps waking
// every 20 µs and the thread switches Ps on every call: six to ten times as
// many context switches as with raw calls, and a few percent more CPU per
// frame, in measurements against the C reference. The socket is
// non-blocking, so the call never sleeps; the price is that a garbage
// collection may wait for one doorbell to finish.

// sendmmsgRaw sends messages [from, from+n) of b on fd (sendmmsg(2)).
func sendmmsgRaw(fd int, b *mmsg.Batch, from, n int) (int, unix.Errno) {
	r, _, e := mmsg.Raw6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.Hdrs[from])), uintptr(n), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// kickRaw is the transmit ring's doorbell, a send(2) of no data.
func kickRaw(fd int) unix.Errno {
	_, _, e := mmsg.Raw6(unix.SYS_SENDTO, uintptr(fd), 0, 0, 0, 0, 0)
	return e
}

// packetStats reads and resets the socket's PACKET_STATISTICS (struct
// tpacket_stats_v3): frames dropped and times the queue froze since the
// last read. It allocates nothing, as unix.GetsockoptTpacketStatsV3 does
// (one struct a call), so that Stats and a Poll of a losing ring stay free
// of allocations.
func packetStats(fd int) (drops, freezes uint32, e unix.Errno) {
	var st unix.TpacketStatsV3
	l := uint32(unsafe.Sizeof(st))
	_, _, e = unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0)
	return st.Drops, st.Freeze_q_cnt, e
}
