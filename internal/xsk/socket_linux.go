package xsk

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/mmsg"
)

// XDPPacketHeadroom is the headroom the kernel leaves in front of every frame
// it writes into a UMEM chunk, in bytes, before the UMEM's own headroom
// (XDP_PACKET_HEADROOM, include/uapi/linux/bpf.h). A received frame starts at
// chunk + XDPPacketHeadroom + the headroom given to RegisterUMEM.
const XDPPacketHeadroom = unix.XDP_PACKET_HEADROOM

// MinChunkSize and MaxChunkSize bound the chunk size of an aligned UMEM
// (xdp_umem_reg in net/xdp/xdp_umem.c: a power of two from 2048 to PAGE_SIZE,
// which is 4096 on x86-64).
const (
	MinChunkSize = 2048
	MaxChunkSize = 4096
)

// Socket is an AF_XDP socket with its UMEM and rings. Make one with
// NewSocket, then RegisterUMEM, SetRingSizes, MapRings and Bind, in that
// order (the order af_xdp.rst gives). The zero value is not usable. A Socket
// belongs to one goroutine, except Statistics and ZeroCopy, which any
// goroutine may call while the socket is open.
type Socket struct {
	fd   int
	Fill FillRing
	Comp CompRing
	RX   RxRing // Size() 0 when the socket has no rx ring
	TX   TxRing // Size() 0 when the socket has no tx ring
}

// NewSocket opens an AF_XDP socket (socket(AF_XDP, SOCK_RAW|SOCK_CLOEXEC, 0)).
// It returns the errno: EPERM without CAP_NET_RAW, EAFNOSUPPORT on a kernel
// without CONFIG_XDP_SOCKETS.
func NewSocket() (*Socket, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &Socket{fd: fd}, nil
}

// FD returns the socket's file descriptor, -1 after Close.
func (s *Socket) FD() int { return s.fd }

// RegisterUMEM registers mem as the socket's UMEM (setsockopt XDP_UMEM_REG):
// chunks of chunkSize bytes, aligned mode, with headroom bytes left free in
// front of each received frame after XDPPacketHeadroom. mem must be page
// aligned, not on the Go heap (an mmap'ed arena), and stay mapped while the
// socket is open; the kernel pins its pages. It returns the errno (EINVAL for
// a chunk size that is not a power of two from 2048 to the page size, or a
// headroom that leaves no room; ENOMEM or EPERM past RLIMIT_MEMLOCK).
func (s *Socket) RegisterUMEM(mem []byte, chunkSize, headroom uint32) error {
	if len(mem) == 0 {
		return unix.EINVAL
	}
	return s.registerUMEM(mem, chunkSize, headroom)
}

// SetRingSizes sizes the four rings (setsockopt XDP_UMEM_FILL_RING,
// XDP_UMEM_COMPLETION_RING, XDP_RX_RING, XDP_TX_RING), each a power of two;
// rx or tx 0 leaves that ring out. It returns the errno (EINVAL for a size
// that is not a power of two).
func (s *Socket) SetRingSizes(fill, comp, rx, tx uint32) error {
	set := func(opt int, n uint32) error {
		if n == 0 {
			return nil
		}
		return unix.SetsockoptInt(s.fd, unix.SOL_XDP, opt, int(n))
	}
	if err := set(unix.XDP_UMEM_FILL_RING, fill); err != nil {
		return err
	}
	if err := set(unix.XDP_UMEM_COMPLETION_RING, comp); err != nil {
		return err
	}
	if err := set(unix.XDP_RX_RING, rx); err != nil {
		return err
	}
	if err := set(unix.XDP_TX_RING, tx); err != nil {
		return err
	}
	s.Fill.size, s.Comp.size, s.RX.size, s.TX.size = fill, comp, rx, tx
	return nil
}

// MapRings maps the rings sized by SetRingSizes (getsockopt
// XDP_MMAP_OFFSETS, then mmap at XDP_UMEM_PGOFF_FILL_RING,
// XDP_UMEM_PGOFF_COMPLETION_RING, XDP_PGOFF_RX_RING and XDP_PGOFF_TX_RING,
// MAP_SHARED|MAP_POPULATE). Close unmaps them. It returns the errno; rings
// mapped before a failure are unmapped by Close.
func (s *Socket) MapRings() error {
	off, err := s.mmapOffsets()
	if err != nil {
		return err
	}
	if err := s.mapRing(&s.Fill.ring, &off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, 8); err != nil {
		return err
	}
	s.Fill.Addrs = addrSlice(&s.Fill.ring, &off.Fr)
	if err := s.mapRing(&s.Comp.ring, &off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, 8); err != nil {
		return err
	}
	s.Comp.Addrs = addrSlice(&s.Comp.ring, &off.Cr)
	if s.RX.size != 0 {
		if err := s.mapRing(&s.RX.ring, &off.Rx, unix.XDP_PGOFF_RX_RING, descSize); err != nil {
			return err
		}
		s.RX.Descs = descSlice(&s.RX.ring, &off.Rx)
	}
	if s.TX.size != 0 {
		if err := s.mapRing(&s.TX.ring, &off.Tx, unix.XDP_PGOFF_TX_RING, descSize); err != nil {
			return err
		}
		s.TX.Descs = descSlice(&s.TX.ring, &off.Tx)
	}
	return nil
}

// mapRing maps one ring of r.size entries of entrySize bytes.
func (s *Socket) mapRing(r *ring, o *unix.XDPRingOffset, pgoff int64, entrySize uint64) error {
	if r.size == 0 || r.size&(r.size-1) != 0 {
		return unix.EINVAL
	}
	length := int(o.Desc + uint64(r.size)*entrySize)
	mem, err := unix.Mmap(s.fd, pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	r.mem = mem
	r.mask = r.size - 1
	setWords(r, o)
	return nil
}

// Bind binds the socket to queue queue of interface ifindex (bind(2) with a
// sockaddr_xdp). flags is a combination of unix.XDP_COPY, unix.XDP_ZEROCOPY
// and unix.XDP_USE_NEED_WAKEUP. It returns the errno: EOPNOTSUPP when the
// driver cannot do zero-copy and XDP_ZEROCOPY was asked, EBUSY while another
// socket (or one being torn down) holds the queue, EINVAL for a queue the
// device does not have or rings missing.
func (s *Socket) Bind(ifindex, queue uint32, flags uint16) error {
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: ifindex, QueueID: queue}
	return unix.Bind(s.fd, sa)
}

// ZeroCopy reports whether the bound socket runs in zero-copy mode
// (getsockopt XDP_OPTIONS, XDP_OPTIONS_ZEROCOPY).
func (s *Socket) ZeroCopy() (bool, error) {
	v, err := unix.GetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_OPTIONS)
	if err != nil {
		return false, err
	}
	return v&unix.XDP_OPTIONS_ZEROCOPY != 0, nil
}

// SetTxBudget sets how many tx descriptors one sendto may process in copy
// mode (setsockopt XDP_MAX_TX_SKB_BUDGET, Linux 6.17 and later; the kernel's
// default is 32, TX_BATCH_SIZE). It returns ENOPROTOOPT on older kernels.
func (s *Socket) SetTxBudget(n int) error {
	return unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, n)
}

// Statistics returns the socket's kernel counters (getsockopt
// XDP_STATISTICS): frames dropped for want of a fill entry or rx slot,
// invalid descriptors, ring-full and ring-empty events.
func (s *Socket) Statistics() (unix.XDPStatistics, error) { return s.statistics() }

// Kick wakes the kernel to send what the tx ring holds (sendto(fd, NULL, 0,
// MSG_DONTWAIT), xsk_sendmsg). It returns 0 or the errno without allocating:
// EAGAIN when the kernel stopped before the ring was empty (its per-call
// budget, a full completion ring or socket send buffer), EBUSY when the device
// dropped a frame (its descriptor still completes), ENOBUFS, ENETDOWN or
// ENXIO.
//
// The call never sleeps (MSG_DONTWAIT; in copy mode it sends at most a budget
// of frames, 32 by default, and returns), so it is made as a raw system call,
// without telling the Go scheduler: that saves about 90 ns per doorbell here,
// a tenth of the cost of sending one frame per doorbell.
func (s *Socket) Kick() unix.Errno {
	_, _, e := mmsg.Raw6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}

// WakeRx wakes the kernel to look at the fill ring (recvfrom(fd, NULL, 0,
// MSG_DONTWAIT), xsk_recvmsg), as a ring with NeedWakeup set asks. It
// returns 0 or the errno without allocating; like Kick it never sleeps and is
// a raw system call.
func (s *Socket) WakeRx() unix.Errno {
	_, _, e := mmsg.Raw6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}

// Close unmaps the rings and closes the socket; the kernel releases the UMEM
// (unpins its pages) shortly after, asynchronously. It is idempotent.
func (s *Socket) Close() error {
	var errs []error
	for _, r := range []*ring{&s.Fill.ring, &s.Comp.ring, &s.RX.ring, &s.TX.ring} {
		if r.mem != nil {
			errs = append(errs, unix.Munmap(r.mem))
		}
		*r = ring{}
	}
	s.Fill.Addrs, s.Comp.Addrs, s.RX.Descs, s.TX.Descs = nil, nil, nil, nil
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	return errors.Join(errs...)
}
