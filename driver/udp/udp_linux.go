//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/life"
	"github.com/skbdev/skb/internal/mmsg"
	"github.com/skbdev/skb/internal/thread"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
)

// Device is a netdev.Device over one UDP socket: a datagram is a packet,
// and a buffer's data (from data to tail, plus its paged part) is the UDP
// payload. See the package documentation for the batching, offloads and the
// conventions for destinations and sources.
//
// A Device is one queue and belongs to one goroutine, as netdev says: Xmit,
// XmitTo, SetDst, Flush, Poll, Wait, Src and the Cache are used from that
// goroutine only. Stats and Close are safe for concurrent use.
type Device struct {
	fd        int
	fdPrivate bool // fd was opened in a private descriptor table (thread.Private)
	family    int
	dualStack bool
	connected bool
	noSrc     bool // Config.NoSrc: receives ask for no source address
	pktInfo   bool // Config.PktInfo: receives ask for the local address
	local     netip.AddrPort
	remote    netip.AddrPort
	remoteSrc netip.AddrPort // remote as Src gives a source: IPv4-mapped as IPv4, no zone

	pool      *pool.Pool
	ownPool   bool
	cache     *pool.Cache
	headroom  int // receive headroom (Config.HeadroomBytes)
	poolHR    int // the pool's headroom
	copybreak int
	batch     int
	busy      bool
	keepP     bool // Config.KeepP: Wait sleeps without handing its P over

	gso       bool // UDP_SEGMENT in use now
	gro       bool // UDP_GRO on
	maxDgram  int  // largest payload of one datagram
	maxGSO    int  // largest payload of one UDP_SEGMENT message
	sendFlags int

	// gsoSuspect says GSO is off for a plain resend of a GSO message the
	// kernel refused with EINVAL or EMSGSIZE, until the first datagram of
	// it tells whether the segmentation was at fault (settleGSO), which
	// gsoReason then counts.
	gsoSuspect bool
	gsoReason  netdev.FallbackReason

	// dst is the destination Xmit uses on an unconnected socket, as a
	// struct sockaddr (mmsg.PutSockaddr); dstLen is 0 until SetDst.
	dst    [mmsg.SockaddrMax]byte
	dstLen int

	// state counts the calls inside the device (refs, and polls among
	// them, so that Close knows a handler may be running) and holds the
	// closed bit. See enter, exit and Close.
	state   atomic.Int64
	readers life.Readers // Stats reading the socket's drop count
	cleaned atomic.Bool
	done    chan struct{}
	doneErr error

	ctr netdev.Counters
	tx  txq
	rx  rxq

	// drops is the socket's count of datagrams the kernel dropped
	// (sk_drops, read with SO_MEMINFO), widened from the kernel's 32 bits;
	// see readDrops.
	drops atomic.Uint64
}

const (
	refOne    = 1
	refMask   = 1<<20 - 1
	pollOne   = 1 << 20
	pollMask  = (1<<20 - 1) << 20
	closedBit = 1 << 62
)

// Open makes a UDP socket as cfg says, binds and connects it, sets its
// options and probes its offloads. It returns an error wrapping ErrConfig
// for a bad Config, or the failing system call's errno prefixed with
// "udp: open: ". The device's buffers come from cfg.Pool, or from a pool of
// its own (closed with the device) when cfg.Pool is nil. With copybreak on
// (the default), Open has the pool make the size classes the copies come
// from, as a driver sets up its receive resources at open (a first arena
// and its headers; on a host with slow page faults 1-2 ms for a pool's
// 512-byte class): a device that only sends saves that with
// netdev.CopybreakOff. Receive buffers are posted by the first Poll.
func Open(cfg Config) (*Device, error) {
	d, err := open(cfg)
	if err != nil {
		return nil, fmt.Errorf("udp: open: %w", err)
	}
	return d, nil
}

func open(cfg Config) (*Device, error) {
	if err := cfg.Config.Validate(); err != nil {
		return nil, netdev.ConfigError(ErrConfig, err)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"SndBuf", cfg.SndBuf}, {"RcvBuf", cfg.RcvBuf}, {"RecvSize", cfg.RecvSize}} {
		if f.v < 0 {
			return nil, netdev.ConfigErrorf(ErrConfig, "%s %d bytes: want 0 (the default) or more", f.name, f.v)
		}
	}
	if cfg.BusyPoll < 0 {
		return nil, netdev.ConfigErrorf(ErrConfig, "BusyPoll %v: want 0 (Wait sleeps) or more", cfg.BusyPoll)
	}
	if r := cfg.Remote; r.IsValid() && (r.Port() == 0 || r.Addr().Unmap().IsUnspecified()) {
		// connect(2) takes both, the unspecified address as this host.
		return nil, netdev.ConfigErrorf(ErrConfig, "Remote %v: want an address and a port to send to", r)
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"SndBuf", cfg.SndBuf}, {"RcvBuf", cfg.RcvBuf}} {
		if b.v > MaxSockBuf {
			return nil, netdev.ConfigErrorf(ErrConfig, "%s %d bytes, over %d (MaxSockBuf)", b.name, b.v, MaxSockBuf)
		}
	}
	d := &Device{
		fd:        -1,
		local:     cfg.Local,
		remote:    cfg.Remote,
		connected: cfg.Remote.IsValid(),
		noSrc:     cfg.NoSrc,
		pktInfo:   cfg.PktInfo,
		headroom:  cfg.HeadroomBytes(),
		copybreak: cfg.CopybreakThreshold(),
		batch:     cfg.BatchSize(),
		busy:      cfg.BusyPoll > 0,
		keepP:     cfg.KeepP && preemptSignals(),
		done:      make(chan struct{}),
	}
	la, ra := cfg.Local.Addr(), cfg.Remote.Addr()
	switch {
	case cfg.Local.IsValid() && la.Is4():
		d.family = unix.AF_INET
	case cfg.Local.IsValid():
		d.family = unix.AF_INET6
		d.dualStack = la.IsUnspecified() || la.Is4In6()
	case cfg.Remote.IsValid() && ra.Is4():
		d.family = unix.AF_INET
	case cfg.Remote.IsValid():
		d.family = unix.AF_INET6
		d.dualStack = ra.Is4In6()
	default:
		// Neither: a dual-stack socket that can send anywhere.
		d.family = unix.AF_INET6
		d.dualStack = true
	}
	if d.connected && cfg.Local.IsValid() && !la.IsUnspecified() && la.Unmap().Is4() != ra.Unmap().Is4() {
		return nil, netdev.ConfigErrorf(ErrConfig, "local %v and remote %v are of different families", cfg.Local, cfg.Remote)
	}
	d.remoteSrc = netip.AddrPortFrom(cfg.Remote.Addr().Unmap().WithZone(""), cfg.Remote.Port())
	// The largest datagram: by the socket's family, and on a dual-stack
	// socket by the destination's (see maxTo), which for a connected one is
	// Remote's. A GSO message keeps to the smaller limit there.
	d.maxDgram = MaxDatagram6
	if d.family == unix.AF_INET || d.connected && ra.Is4In6() {
		d.maxDgram = MaxDatagram4
	}
	d.maxGSO = d.maxDgram
	if d.dualStack {
		d.maxGSO = MaxDatagram4
	}
	switch {
	case cfg.TxTimeout < 0:
		d.sendFlags = unix.MSG_DONTWAIT
	case cfg.TxTimeout == 0:
		cfg.TxTimeout = DefaultTxTimeout
	}

	fd, err := unix.Socket(d.family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	d.fd, d.fdPrivate = fd, thread.Private()
	if err := d.setup(cfg); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := d.initBuffers(cfg); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return d, nil
}

// setup sets the socket options, binds, connects and probes the offloads.
func (d *Device) setup(cfg Config) error {
	fd := d.fd
	if d.family == unix.AF_INET6 {
		v6only := 1
		if d.dualStack {
			v6only = 0
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			return fmt.Errorf("setsockopt IPV6_V6ONLY: %w", err)
		}
	}
	if cfg.ReusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fmt.Errorf("setsockopt SO_REUSEPORT: %w", err)
		}
	}
	if cfg.BindToDevice != "" {
		if err := unix.BindToDevice(fd, cfg.BindToDevice); err != nil {
			return fmt.Errorf("setsockopt SO_BINDTODEVICE %s: %w", cfg.BindToDevice, err)
		}
	}
	if err := setBuf(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SndBuf); err != nil {
		return fmt.Errorf("setsockopt SO_SNDBUF %d: %w", cfg.SndBuf, err)
	}
	if err := setBuf(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.RcvBuf); err != nil {
		return fmt.Errorf("setsockopt SO_RCVBUF %d: %w", cfg.RcvBuf, err)
	}
	if cfg.TxTimeout > 0 {
		tv := unix.NsecToTimeval(cfg.TxTimeout.Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			return fmt.Errorf("setsockopt SO_SNDTIMEO: %w", err)
		}
	}
	if cfg.BusyPoll > 0 {
		us := max(1, int(cfg.BusyPoll/time.Microsecond))
		err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, us)
		if err != nil && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("setsockopt SO_BUSY_POLL %d: %w", us, err)
		}
	}
	if cfg.Local.IsValid() {
		var sa [mmsg.SockaddrMax]byte
		n := mmsg.PutSockaddr(sa[:], d.family, cfg.Local)
		if err := bindRaw(fd, sa[:n]); err != nil {
			return fmt.Errorf("bind %v: %w", cfg.Local, err)
		}
	}
	if d.connected {
		var sa [mmsg.SockaddrMax]byte
		n := mmsg.PutSockaddr(sa[:], d.family, cfg.Remote)
		if n == 0 {
			return netdev.ConfigErrorf(ErrConfig, "cannot reach %v from an IPv4 socket", cfg.Remote)
		}
		if err := connectRaw(fd, sa[:n]); err != nil {
			return fmt.Errorf("connect %v: %w", cfg.Remote, err)
		}
	}
	if sa, err := unix.Getsockname(fd); err == nil {
		d.local = sockaddrToAddrPort(sa)
	}
	if cfg.GSO {
		// Probe UDP_SEGMENT as wireguard-go does: the option exists when
		// getsockopt knows it (Linux 4.18).
		if _, err := unix.GetsockoptInt(fd, unix.SOL_UDP, unix.UDP_SEGMENT); err != nil {
			d.ctr.GSOFallback(netdev.FallbackUnsupported)
		} else {
			d.gso = true
		}
	}
	if cfg.PktInfo {
		// IPv4 datagrams, also those of a dual-stack IPv6 socket, report
		// with IP_PKTINFO; IPv6 ones with IPV6_PKTINFO.
		if d.family == unix.AF_INET || d.dualStack {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1); err != nil {
				return fmt.Errorf("setsockopt IP_PKTINFO: %w", err)
			}
		}
		if d.family == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1); err != nil {
				return fmt.Errorf("setsockopt IPV6_RECVPKTINFO: %w", err)
			}
		}
	}
	if cfg.GRO {
		if err := unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
			d.ctr.GSOFallback(netdev.FallbackUnsupported)
		} else {
			d.gro = true
		}
	}
	return nil
}

// setBuf sets a socket buffer size with the FORCE option, which needs
// CAP_NET_ADMIN, and falls back to the capped one.
func setBuf(fd, force, plain, v int) error {
	if v == 0 {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, v); err == nil {
		return nil
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, v)
}

// bindRaw and connectRaw take a struct sockaddr as bytes, so that an
// IPv4-mapped address reaches a dual-stack socket as written.
func bindRaw(fd int, sa []byte) error { return retryEINTR(mmsg.Bind, fd, sa) }

func connectRaw(fd int, sa []byte) error { return retryEINTR(mmsg.Connect, fd, sa) }

func retryEINTR(call func(int, []byte) error, fd int, sa []byte) error {
	for {
		if err := call(fd, sa); err != unix.EINTR {
			return err
		}
	}
}

func sockaddrToAddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// initBuffers sets up the pool, the cache and the batches.
func (d *Device) initBuffers(cfg Config) error {
	p := cfg.Pool
	if p == nil {
		var err error
		p, err = pool.New(pool.Config{Headroom: d.headroom, Name: "udp " + d.local.String()})
		if err != nil {
			return err
		}
		d.ownPool = true
	}
	d.pool = p
	d.poolHR = p.Headroom()
	classes := p.Classes()
	// The receive buffer: the 2 KiB class (or the one just above it), or
	// the largest with GRO, unless RecvSize asks for more.
	target := pool.FrameSize
	if d.gro {
		target = classes[len(classes)-1].Size
	}
	if cfg.RecvSize > 0 && (!d.gro || d.headroom+cfg.RecvSize > target) {
		// (With GRO the buffers hold whole trains whatever RecvSize:
		// it bounds each datagram, in deliver.)
		target = d.headroom + cfg.RecvSize
	}
	block := 0
	for _, c := range classes {
		if c.Size >= target {
			block = c.Size
			break
		}
	}
	if block == 0 {
		if cfg.RecvSize > 0 {
			if d.ownPool {
				p.Close()
			}
			return netdev.ConfigErrorf(ErrConfig, "no size class holds %d bytes of headroom and a %d-byte datagram", d.headroom, cfg.RecvSize)
		}
		block = classes[len(classes)-1].Size
	}
	if block <= d.headroom {
		if d.ownPool {
			p.Close()
		}
		return netdev.ConfigErrorf(ErrConfig, "headroom %d leaves no room in %d-byte buffers", d.headroom, block)
	}
	recvSize := block - d.headroom
	maxDgram := recvSize
	if cfg.RecvSize > 0 {
		maxDgram = cfg.RecvSize
		if !d.gro {
			recvSize = cfg.RecvSize
		}
	}
	// A copy saves memory only when it lands in a smaller class than the
	// receive buffer: a datagram whose copy would take a block as large
	// is handed over in its receive buffer (with RecvSize 64, say, there
	// is no smaller class, and the copy would only cost time).
	smaller := 0
	for _, c := range classes {
		if c.Size < block {
			smaller = c.Size
		}
	}
	d.copybreak = min(d.copybreak, max(0, smaller-d.headroom+1))
	d.cache = p.NewCache()
	d.tx.init(d.batch)
	d.rx.init(d.batch, recvSize, maxDgram, d.gro || d.pktInfo, !d.noSrc && !d.connected)
	d.warmCopy()
	return nil
}

// enter registers a call inside the device; it reports false once the
// device is closed. exit undoes it and, for the last call out of a closed
// device, releases the device's resources.
func (d *Device) enter() bool {
	if d.state.Add(refOne)&closedBit == 0 {
		return true
	}
	d.enterFailed()
	return false
}

// enterFailed undoes a failed enter; kept out of line so that enter, on
// every Xmit and Flush, is inlined.
//
//go:noinline
func (d *Device) enterFailed() { d.exit() }

func (d *Device) exit() {
	if d.state.Add(-refOne) == closedBit {
		d.cleanup()
	}
}

// enterPoll and exitPoll are enter and exit for Poll, which runs the
// caller's handler: Close called meanwhile (from the handler, or from
// another goroutine) does not wait for it.
//
// A Poll entered while another runs (from its handler) panics, after
// undoing its entry: see netdev.NestedPoll.
func (d *Device) enterPoll() bool {
	s := d.state.Add(refOne + pollOne)
	if s&closedBit == 0 && s&pollMask == pollOne {
		return true
	}
	d.enterPollFailed(s)
	return false
}

// enterPollFailed undoes a failed enterPoll, whose entry left state s,
// out of line as enterFailed, and panics for a nested one.
//
//go:noinline
func (d *Device) enterPollFailed(s int64) {
	d.exitPoll()
	if s&closedBit == 0 {
		netdev.NestedPoll("udp")
	}
}

func (d *Device) exitPoll() {
	if d.state.Add(-(refOne + pollOne)) == closedBit {
		d.cleanup()
	}
}

// closing reports whether Close has been called.
func (d *Device) closing() bool { return d.state.Load()&closedBit != 0 }

// Close shuts the socket down, which wakes a Wait or a doorbell blocked in
// the kernel, waits for the device's goroutine to leave the device, frees
// every buffer the device holds (queued for transmit, counted in
// tx_dropped_closed; received but not yet handed over, counted in
// rx_dropped_closed; posted for receive), closes the cache and the socket,
// and closes the pool when the device made it. Safe for concurrent use;
// later calls return ErrClosed.
//
// When Close is called while Poll is running (from the handler, or from
// another goroutine) it does not wait: the buffers are released when Poll
// returns. Close from another goroutine must not race with the device's
// goroutine using the Cache outside the device's methods
// (netdev.Device.Cache): stop such an owner first. A pool the device
// made reports buffers the caller still holds: Close then returns an error
// wrapping pool.ErrLeak, and leaves the pool mapped (a Close that did not
// wait for Poll returns nil, and the leak is not reported). Buffers still held after
// Close are freed with their own Free method, not into the closed Cache.
func (d *Device) Close() error {
	// A reference of Close's own, so that the owner's last exit cannot
	// close the socket (and its number be reused) before the shutdown.
	d.state.Add(refOne)
	old := d.state.Or(closedBit)
	if old&closedBit != 0 {
		d.exit()
		return errCloseClosed
	}
	if old&refMask != refOne {
		// Wake the device's goroutine wherever it sleeps in the kernel:
		// shutdown wakes poll, recvmmsg and a sendmmsg waiting for room.
		unix.Shutdown(d.fd, unix.SHUT_RDWR)
	}
	d.exit() // the cleanup, when the owner is out
	if old&pollMask != 0 {
		return nil
	}
	<-d.done
	return d.doneErr
}

// cleanup releases everything, once, on the goroutine that saw the device
// closed and empty.
func (d *Device) cleanup() {
	if !d.cleaned.CompareAndSwap(false, true) {
		return
	}
	d.readers.Wait()
	d.readDrops() // the last count, for Stats after Close
	d.tx.drop(d, netdev.DropClosed)
	d.rx.release(d)
	d.cache.Close()
	var err error
	var e error
	// In the table the socket was opened in: the process's, also when the
	// last call out is on a thread with a private one (netdev.RunOnThread).
	thread.Release(d.fdPrivate, func() { e = unix.Close(d.fd) })
	if e != nil {
		err = fmt.Errorf("udp: close: %w", e)
	}
	if d.ownPool {
		if e := d.pool.Close(); e != nil && err == nil {
			err = fmt.Errorf("udp: close: %w", e)
		}
	}
	d.doneErr = err
	close(d.done)
}

// Cache returns the pool cache the device allocates receive buffers from and
// frees sent buffers into. Use it on the device's goroutine only: allocate
// transmit buffers from it and free received buffers into it.
func (d *Device) Cache() *pool.Cache { return d.cache }

// Pool returns the pool the device's buffers come from.
func (d *Device) Pool() *pool.Pool { return d.pool }

// Stats returns a snapshot of the counters. Safe for concurrent use, also
// after Close. rx_dropped_kernel is read from the socket as Stats is called
// (its drop count, sk_drops, with getsockopt SO_MEMINFO), so that receiving
// costs nothing per datagram for it.
func (d *Device) Stats() netdev.Stats {
	s := d.ctr.Snapshot()
	drops := d.drops.Load()
	if d.readers.Enter(d.closing) {
		drops = d.readDrops()
		d.readers.Exit()
	}
	s.RxDropped[netdev.DropKernel] += drops
	return s
}

// dropsEvery is how many receive calls pass between two readings of the
// socket's drop count by the device's goroutine, so that the kernel's 32-bit
// count is never read so rarely that it could wrap unseen, also when nobody
// calls Stats.
const dropsEvery = 1024

// tickDrops counts a receive call, reading the drop count every dropsEvery
// calls.
func (d *Device) tickDrops() { d.tickDropsN(1) }

// tickDropsN counts n receive calls (a busy poll's round), reading the
// drop count when they cross a multiple of dropsEvery.
func (d *Device) tickDropsN(n int) {
	before := d.rx.calls
	d.rx.calls += uint32(n)
	if d.rx.calls/dropsEvery != before/dropsEvery {
		d.readDrops()
	}
}

// readDrops reads the socket's drop count (SO_MEMINFO's SK_MEMINFO_DROPS,
// the kernel's sk_drops, which SO_RXQ_OVFL would report on every datagram),
// adds its growth to d.drops and returns the new total. The kernel's count is
// 32 bits: growth is taken modulo 2^32, and a reading older than one already
// counted (a concurrent Stats) is ignored. The caller holds a reference
// (enter) or is cleanup, so that the descriptor is open.
func (d *Device) readDrops() uint64 {
	var mi [unix.SK_MEMINFO_VARS]uint32
	if mmsg.Meminfo(d.fd, &mi) != nil {
		return d.drops.Load()
	}
	v := mi[unix.SK_MEMINFO_DROPS]
	for {
		old := d.drops.Load()
		delta := v - uint32(old)
		if delta == 0 || delta >= 1<<31 {
			return old
		}
		if d.drops.CompareAndSwap(old, old+uint64(delta)) {
			return old + uint64(delta)
		}
	}
}

// PendingError returns and clears the socket's pending error
// (getsockopt(2) SO_ERROR, socket(7)), which the next send would otherwise
// report: on a connected device, ECONNREFUSED (as a syscall.Errno, matched
// with errors.Is) when an ICMP port unreachable came back for a datagram
// sent after the last send that reported one, such as the last datagram
// of a run. It returns nil when none is pending, ErrClosed after Close,
// and the getsockopt error prefixed "udp: getsockopt SO_ERROR: ". It
// allocates nothing.
func (d *Device) PendingError() error {
	if !d.enter() {
		return errPendingClosed
	}
	defer d.exit()
	e, err := unix.GetsockoptInt(d.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil:
		return fmt.Errorf("udp: getsockopt SO_ERROR: %w", err)
	case e != 0:
		return unix.Errno(e)
	}
	return nil
}

// LocalAddr returns the address the socket is bound to (getsockname(2) at
// Open; an IPv4-mapped address is given as IPv4).
func (d *Device) LocalAddr() netip.AddrPort { return d.local }

// RemoteAddr returns the address the socket is connected to, or the zero
// AddrPort for an unconnected device.
func (d *Device) RemoteAddr() netip.AddrPort { return d.remote }

// GSO reports whether transmit segmentation (UDP_SEGMENT) is in use: asked
// for in Config, supported at Open and not turned off since by a failed send.
func (d *Device) GSO() bool { return d.gso }

// GRO reports whether receive coalescing (UDP_GRO) is on.
func (d *Device) GRO() bool { return d.gro }

// Copybreak returns the receive copybreak threshold in effect, in bytes:
// datagrams shorter than it are copied into right-sized buffers; 0 when
// copybreak is off. It is Config's threshold (CopybreakThreshold: 256 for
// 0), lowered so that every copy lands in a smaller class of the pool than
// the receive buffer: with the default pool and headroom at most 385 with
// 2048-byte receive buffers (the default), 1921 with 68 KiB ones (GRO, or
// a RecvSize over 1920), and 0 with buffers of the smallest class.
func (d *Device) Copybreak() int { return d.copybreak }

// PktInfo reports whether receives report each datagram's local address
// (Config.PktInfo), which DstAddr gives.
func (d *Device) PktInfo() bool { return d.pktInfo }

// KeepP reports whether Wait sleeps keeping its goroutine's P: asked for
// in Config.KeepP, and the runtime's preemption signal on at Open (see
// Config.KeepP).
func (d *Device) KeepP() bool { return d.keepP }

// Fd returns the socket's file descriptor, for socket options the Config
// does not cover. It stays owned by the device: do not close it, read from
// it or write to it.
func (d *Device) Fd() int { return d.fd }

// SetDst sets the destination of the datagrams that Xmit sends from now on
// (Flush and the doorbell send each datagram where it was addressed when it
// was queued). It is how an unconnected device is given a destination; on a
// connected one it overrides Remote for those datagrams (the kernel allows
// sendto on a connected UDP socket). It returns ErrNoDestination for the
// zero AddrPort, port 0, the unspecified address (which the kernel takes
// as this host), an IPv6 address on an IPv4 socket or an IPv4 address on
// a socket bound or connected to an IPv6 one that is not IPv4-mapped; the
// destination is then unset. After Close it returns ErrClosed. It allocates nothing but
// the error.
func (d *Device) SetDst(dst netip.AddrPort) error {
	if d.closing() {
		return errSetDstClosed
	}
	d.dstLen = 0
	if why, _ := d.badDst(dst); why != nil {
		return opError{"set destination: " + dst.String(), why}
	}
	d.dstLen = mmsg.PutSockaddr(d.dst[:], d.family, dst)
	return nil
}

var _ netdev.BusyPoller = (*Device)(nil)
