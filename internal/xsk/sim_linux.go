package xsk

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Sim plays the kernel's side of a Socket's fill and rx rings held in
// ordinary memory, so that a driver's receive path can be tested and
// benchmarked without a socket, a device or root: it takes the frame
// addresses user space posted to the fill ring, in the order they were
// posted (as the kernel's xskq_cons_peek_addr does), and produces rx
// descriptors for them. The completion and tx rings exist; the tx ring is
// consumed only when a test says (TakeTx), and the completion ring stays
// empty.
// A Sim and its Socket belong to one goroutine.
type Sim struct {
	s     *Socket
	words [4][3]uint32 // producer, consumer and flags of fill, completion, rx, tx
}

// NewSim returns a Socket whose four rings, of the given sizes (powers of
// two; rx or tx 0 leaves that ring out), live in ordinary memory, and the
// Sim that plays the kernel's side of them. The Socket has no file
// descriptor: FD is -1, Kick and WakeRx return EBADF, Close releases
// nothing. It panics on a size that is not a power of two, as a test's
// misuse.
func NewSim(fill, comp, rx, tx uint32) (*Socket, *Sim) {
	k := &Sim{s: &Socket{fd: -1}}
	s := k.s
	for i, r := range []*ring{&s.Fill.ring, &s.Comp.ring, &s.RX.ring, &s.TX.ring} {
		n := []uint32{fill, comp, rx, tx}[i]
		if n == 0 && i < 2 || n&(n-1) != 0 {
			panic(fmt.Sprintf("xsk: sim ring sizes fill %d comp %d rx %d tx %d: want powers of two (rx and tx may be 0)", fill, comp, rx, tx))
		}
		w := &k.words[i]
		*r = ring{producer: &w[0], consumer: &w[1], flags: &w[2], size: n, mask: n - 1}
	}
	s.Fill.Addrs = make([]uint64, fill)
	s.Comp.Addrs = make([]uint64, comp)
	if rx != 0 {
		s.RX.Descs = make([]unix.XDPDesc, rx)
	}
	if tx != 0 {
		s.TX.Descs = make([]unix.XDPDesc, tx)
	}
	return s, k
}

// TakeFill consumes up to len(dst) addresses from the fill ring into dst,
// oldest first, and returns how many; the slots are free for user space
// again.
func (k *Sim) TakeFill(dst []uint64) int {
	f := &k.s.Fill
	w := &k.words[0]
	n := min(uint32(len(dst)), w[0]-w[1])
	for i := range n {
		dst[i] = f.Addrs[(w[1]+i)&f.mask]
	}
	w[1] += n
	return int(n)
}

// PutRx produces descriptors for as many of descs as the rx ring has room
// for, in order, and returns how many.
func (k *Sim) PutRx(descs []unix.XDPDesc) int {
	r := &k.s.RX
	w := &k.words[2]
	n := min(uint32(len(descs)), r.size-(w[0]-w[1]))
	for i := range n {
		r.Descs[(w[0]+i)&r.mask] = descs[i]
	}
	w[0] += n
	return int(n)
}

// Pending returns how many rx descriptors user space has not consumed (as
// published by its Release).
func (k *Sim) Pending() int { return int(k.words[2][0] - k.words[2][1]) }

// TakeTx consumes every descriptor user space queued on the tx ring, as a
// device that transmits on its own would, without completing them, and
// returns how many.
func (k *Sim) TakeTx() int {
	w := &k.words[3]
	n := w[0] - w[1]
	w[1] = w[0]
	return int(n)
}
