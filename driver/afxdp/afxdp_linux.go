package afxdp

import (
	"errors"
	"fmt"
	"math/bits"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/life"
	"github.com/skbdev/skb/internal/nap"
	"github.com/skbdev/skb/internal/thread"
	"github.com/skbdev/skb/internal/xsk"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// ethHeaderLen and vlanTagLen bound the frames Xmit accepts: at least an
// Ethernet header, at most MTU + ETH_HLEN + VLAN_HLEN, the largest frame a
// device forwards (is_skb_forwardable in net/core/dev.c).
const (
	ethHeaderLen = 14
	vlanTagLen   = 4
)

// maxKickStalls bounds the kicks of one doorbell that move nothing (EAGAIN
// with a full socket send buffer while the peer catches up): after that many
// the doorbell returns and what is left in the tx ring goes with the next one.
const maxKickStalls = 64

// bindBusyWait is how long Open retries a bind that fails with EBUSY: the
// kernel releases a closed socket's hold on the queue asynchronously, 10 to
// 20 ms later (xdp_put_umem's deferred work).
const bindBusyWait = time.Second

// Device is one queue of a network interface driven through an AF_XDP
// socket whose UMEM is a pool arena: received frames are pool buffers
// handed to Poll's handler without a copy, and a pool buffer from the UMEM is
// transmitted without a copy. (With a Config.Pool that has no contiguous
// class, Mode.PrivateUMEM, frames are copied both ways.) It implements
// netdev.Device; see the package documentation for the frame life cycle.
//
// A Device belongs to one goroutine (Xmit, Flush, TxAvail, Poll, Wait, Alloc
// and the Cache); Stats, XDPStats, Mode and Close are safe from any
// goroutine.
type Device struct {
	// Set by Open, then read-only.
	ifname       string
	ifindex      int
	queue        int
	mtu          int
	mac          net.HardwareAddr
	cfg          Config
	mode         Mode
	p            *pool.Pool  // the pool whose contiguous class is the UMEM
	ownPool      bool        // p was made by Open and is closed by Close
	cache        *pool.Cache // p's cache: UMEM frames come from it and go back to it
	up           *pool.Pool  // the application's pool: p, or Config.Pool when it has no UMEM class
	uc           *pool.Cache // up's cache, handed out by Cache: cache when up is p
	umem         *pool.Arena
	umemBase     uintptr // address of the UMEM's first byte (headAddr)
	frameSize    int
	shift        uint   // log2(frameSize)
	nframes      uint64 // frames in the UMEM
	rxOff        int    // offset of received data in a frame: XDPHeadroom + UMEM headroom
	allocSize    int    // Cache.Alloc size that yields a UMEM frame
	maxLen       int    // longest frame Xmit takes
	copybreak    int    // effective threshold, 0 off
	copyHeadroom int    // headroom of received copies (copybreak, private UMEM)
	batch        uint32 // frames Xmit queues before ringing itself
	needWakeup   bool
	sock         *xsk.Socket
	xdp          *xdpProgram
	wakeFD       int  // eventfd that Close writes to wake a WaitPoll
	fdPrivate    bool // the device was opened on a thread with a private descriptor table (thread.Private)

	// The owner goroutine's state.
	rxBufs    []*skb.Buff // by frame index: buffers posted to the fill ring
	txBufs    []*skb.Buff // by frame index: buffers in the tx ring until completion
	posted    int         // len of rxBufs in use
	rxTaken   uint32      // descriptors of Poll's chunk turned into buffers and not yet consumed from the rx ring
	txQueued  uint32      // descriptors produced since the last doorbell
	txCounted uint32      // tx ring consumer up to which tx_packets counted
	txBusy    uint32      // EBUSY drops not yet taken off tx_packets
	empty     uint        // Polls that found nothing (linkPolls)
	touched   int         // sink of touch's loads
	pfds      [2]unix.PollFd
	// allocBuf carries refill's buffers from the cache (AllocN, a chunk
	// per call) to rxBufs; its entries are stale afterwards, each buffer
	// owned through rxBufs.
	allocBuf  [pollChunk]*skb.Buff
	ts        unix.Timespec
	kicks     atomic.Uint64
	kickBusy  atomic.Uint64
	txCopied  atomic.Uint64
	errKick   error // last wrapped kick error, reused while the errno repeats
	errnoKick unix.Errno
	errNoBuf  error // pool exhausted on a transmit copy, wrapped once

	ctr netdev.Counters

	// state is 1 once closed, plus 2 per method of the owner in progress,
	// plus pollMark while Poll runs: the resources are torn down when it
	// reaches exactly 1. Stats and XDPStats, from any goroutine, count in
	// readers instead, which the teardown waits for.
	state     atomic.Int32
	readers   life.Readers
	cerr      closedErrs // the errors of the closed device
	down      sync.Once
	downDone  chan struct{}
	downErr   error
	mu        sync.Mutex // guards lastXStat, what XDPStats returns after Close
	lastXStat XDPStats
}

// Open opens queue queue of interface ifname as a Device: it makes (or takes)
// the pool whose contiguous class is the UMEM (a private one when
// Config.Pool has none), opens the AF_XDP socket,
// registers the UMEM, maps the rings, fills the fill ring, binds (zero-copy
// first unless cfg says otherwise), loads the redirect program and attaches
// it (native first). It runs in the calling thread's network namespace: call
// it inside the namespace (lab.Host.Do). The caller must Close the device.
//
// Errors wrap ErrConfig or the kernel's errno
// ("afxdp: bind veth0 queue 0: device or resource busy"); on error everything
// Open made is released, the program detached and the socket closed.
func Open(ifname string, queue int, cfg Config) (*Device, error) {
	if err := cfg.Config.Validate(); err != nil {
		return nil, fmt.Errorf("afxdp: open %s queue %d: %w", ifname, queue, netdev.ConfigError(ErrConfig, err))
	}
	c, err := cfg.resolved()
	if err != nil {
		return nil, fmt.Errorf("afxdp: open %s queue %d: %w", ifname, queue, err)
	}
	switch {
	case ifname == "":
		return nil, fmt.Errorf("afxdp: open: %w", netdev.ConfigErrorf(ErrConfig, "no interface name"))
	case queue < 0:
		return nil, fmt.Errorf("afxdp: open %s queue %d: %w", ifname, queue, netdev.ConfigErrorf(ErrConfig, "negative queue"))
	}
	d := &Device{ifname: ifname, queue: queue, cfg: c, wakeFD: -1, downDone: make(chan struct{}), fdPrivate: thread.Private(), cerr: newClosedErrs(ifname, queue)}
	if err := d.open(); err != nil {
		d.teardown()
		return nil, err
	}
	return d, nil
}

// wrap prefixes err with the package, the operation, the interface and the
// queue.
func (d *Device) wrap(op string, err error) error {
	return fmt.Errorf("afxdp: %s %s queue %d: %w", op, d.ifname, d.queue, err)
}

func (d *Device) open() error {
	c := &d.cfg
	ifi, err := net.InterfaceByName(d.ifname)
	if err != nil {
		return d.wrap("open", err)
	}
	d.ifindex, d.mtu, d.mac = ifi.Index, ifi.MTU, ifi.HardwareAddr
	if err := d.setupMem(); err != nil {
		return err
	}
	s, err := xsk.NewSocket()
	if err != nil {
		return d.wrap("socket", err)
	}
	d.sock = s
	umemHeadroom := uint32(d.rxOff - XDPHeadroom)
	if err := s.RegisterUMEM(d.umem.Bytes(), uint32(d.frameSize), umemHeadroom); err != nil {
		return d.wrap("register umem", err)
	}
	rs := uint32(c.RingSize)
	rx := rs
	if c.TxOnly {
		rx = 0
	}
	if err := s.SetRingSizes(rs, rs, rx, rs); err != nil {
		return d.wrap("set ring sizes", err)
	}
	if err := s.MapRings(); err != nil {
		return d.wrap("map rings", err)
	}
	if c.TxBudget > 0 {
		if err := s.SetTxBudget(c.TxBudget); err != nil {
			return d.wrap("set tx budget", err)
		}
	}
	if !c.TxOnly {
		// The fill ring is full before the first frame can arrive.
		d.refill()
	}
	if err := d.bind(); err != nil {
		return err
	}
	if c.TxOnly {
		d.mode.Attach = AttachNone
	} else {
		x, err := attachXDP(d.ifindex, d.queue, s.FD(), c.Attach)
		if err != nil {
			return d.wrap("xdp", err)
		}
		d.xdp = x
		d.mode.Attach = x.mode
		if x.nativeErr != nil {
			d.mode.NativeErr = d.wrap("attach native", x.nativeErr)
		}
	}
	if c.Wait == WaitPoll {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			return d.wrap("eventfd", err)
		}
		d.wakeFD = fd
		d.pfds = [2]unix.PollFd{{Fd: int32(s.FD()), Events: unix.POLLIN}, {Fd: int32(fd), Events: unix.POLLIN}}
	}
	return nil
}

// setupMem makes the pools, the caches and the frame tables: everything of
// the device that lives in user memory.
func (d *Device) setupMem() error {
	if err := d.setupPool(); err != nil {
		return err
	}
	d.cache = d.p.NewCache()
	d.uc = d.cache
	if d.up != d.p {
		d.uc = d.up.NewCache()
	}
	d.rxBufs = make([]*skb.Buff, d.nframes)
	d.txBufs = make([]*skb.Buff, d.nframes)
	d.errNoBuf = d.wrap("xmit", pool.ErrExhausted)
	return nil
}

// setupPool makes or takes the pools and derives the frame geometry: the
// UMEM is Config.Pool's contiguous class when it has one of the frame size,
// else a pool of the driver's own; in that last case received frames are
// copied into Config.Pool.
func (d *Device) setupPool() error {
	c := &d.cfg
	want := c.HeadroomBytes()
	if c.Pool != nil {
		d.up = c.Pool
		if ci := umemClass(c.Pool, c.FrameSize); ci >= 0 {
			d.p = c.Pool
			return d.setupGeometry(ci)
		}
		d.mode.PrivateUMEM = true
	}
	fs := c.FrameSize
	if fs == 0 {
		fs = DefaultFrameSize
	}
	if c.Frames < c.RingSize {
		return d.wrap("open", netdev.ConfigErrorf(ErrConfig, "%d frames cannot fill a fill ring of %d", c.Frames, c.RingSize))
	}
	rxOff := max(want, XDPHeadroom)
	if rxOff+ethHeaderLen > fs {
		return d.wrap("open", netdev.ConfigErrorf(ErrConfig, "headroom %d leaves no room in a frame of %d", want, fs))
	}
	classes := []pool.Class{{Size: fs, Max: c.Frames, Contiguous: true}}
	if thr := c.CopybreakThreshold(); thr > 0 && d.up == nil {
		// A class for copybreak copies: the packet behind the same headroom.
		small := pool.SmallSize
		for small < rxOff+thr {
			small *= 2
		}
		if small < fs {
			classes = append(classes, pool.Class{Size: small})
		}
	}
	name := "afxdp " + d.ifname
	if d.up != nil {
		name += " private umem"
	}
	p, err := pool.New(pool.Config{Classes: classes, Headroom: rxOff, Populate: true, Name: name})
	if err != nil {
		return d.wrap("open", err)
	}
	d.p, d.ownPool = p, true
	if d.up == nil {
		d.up = p
	}
	return d.setupGeometry(umemClass(p, fs))
}

// umemClass returns the index of p's contiguous class of frameSize bytes
// (2048 or 4096 when frameSize is 0), or -1.
func umemClass(p *pool.Pool, frameSize int) int {
	for i, cl := range p.Classes() {
		ok := cl.Size == frameSize || frameSize == 0 && (cl.Size == 2048 || cl.Size == 4096)
		if cl.Contiguous && ok && p.Arena(i) != nil {
			return i
		}
	}
	return -1
}

// setupGeometry derives the frame geometry from class ci of the UMEM pool.
func (d *Device) setupGeometry(ci int) error {
	c := &d.cfg
	classes := d.p.Classes()
	d.umem = d.p.Arena(ci)
	d.umemBase = baseOf(d.umem.Bytes())
	d.frameSize = classes[ci].Size
	d.shift = uint(bits.TrailingZeros(uint(d.frameSize)))
	d.nframes = uint64(len(d.umem.Bytes()) / d.frameSize)
	hr := d.p.Headroom()
	want := c.HeadroomBytes()
	d.rxOff = max(want, hr, XDPHeadroom)
	if d.rxOff+ethHeaderLen > d.frameSize {
		return d.wrap("open", netdev.ConfigErrorf(ErrConfig, "headroom %d leaves no room in a frame of %d", d.rxOff, d.frameSize))
	}
	d.allocSize = d.frameSize - hr
	d.maxLen = min(d.mtu+ethHeaderLen+vlanTagLen, d.allocSize)
	thr := c.CopybreakThreshold()
	switch {
	case d.mode.PrivateUMEM:
		// Every frame is copied; those under the threshold are the
		// copybreak copies (right-sized, as every copy is).
		d.copybreak = thr
		d.copyHeadroom = max(want, d.up.Headroom())
	case thr > 0 && ci > 0:
		// Copybreak copies go to the largest class below the UMEM frame;
		// with none, a copy would take another UMEM frame: off.
		d.copyHeadroom = max(want, hr)
		d.copybreak = max(0, min(thr, classes[ci-1].Size-d.copyHeadroom+1))
	}
	d.batch = uint32(c.BatchSize())
	if d.batch > uint32(c.RingSize) {
		d.batch = uint32(c.RingSize)
	}
	return nil
}

// bind binds the socket, zero-copy first when BindAuto, retrying while the
// queue is still held by a socket being torn down (EBUSY).
func (d *Device) bind() error {
	try := func(flags uint16) error {
		deadline := time.Now().Add(bindBusyWait)
		for {
			err := d.sock.Bind(uint32(d.ifindex), uint32(d.queue), flags|unix.XDP_USE_NEED_WAKEUP)
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				return err
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	var err error
	switch d.cfg.Bind {
	case BindZeroCopy:
		err = try(unix.XDP_ZEROCOPY)
	case BindCopy:
		err = try(unix.XDP_COPY)
	default:
		if zerr := try(unix.XDP_ZEROCOPY); zerr != nil {
			d.mode.ZeroCopyErr = d.wrap("bind zerocopy", zerr)
			err = zerr
			if !errors.Is(zerr, unix.EBUSY) {
				// (A queue another socket holds is held for copy mode
				// too: no second wait.)
				err = try(unix.XDP_COPY)
			}
		}
	}
	if errors.Is(err, unix.EBUSY) {
		return d.wrap("bind "+d.cfg.Bind.String(), fmt.Errorf("the queue is in use by another AF_XDP socket (retried for %v; stop the program holding it, or use another queue): %w", bindBusyWait, err))
	}
	if err != nil {
		return d.wrap("bind "+d.cfg.Bind.String(), err)
	}
	zc, err := d.sock.ZeroCopy()
	if err != nil {
		return d.wrap("bind", err)
	}
	d.mode.Bind = BindCopy
	if zc {
		d.mode.Bind = BindZeroCopy
	}
	d.needWakeup = true
	return nil
}

// enter marks a method of the owner (or Stats) in progress; it returns false
// once the device is closed.
func (d *Device) enter() bool {
	if d.state.Add(2)&1 != 0 {
		d.exit()
		return false
	}
	return true
}

// exit ends what enter began; the last one out of a closed device tears it
// down.
func (d *Device) exit() {
	if d.state.Add(-2) == 1 {
		d.teardown()
	}
}

func (d *Device) closed() bool { return d.state.Load()&1 != 0 }

// sleepSlice is the longest one sleep of WaitSleep lasts: a longer
// Config.Sleep is slept in slices, between which Wait looks at the rx ring
// and for Close, which cannot wake a nanosleep(2) and waits up to a second
// for the owner to leave.
const sleepSlice = 10 * time.Millisecond

// pollMark is what Poll adds to state beside its reference, so that Close
// called from the handler (or while the handler runs) does not wait for
// Poll to return.
const pollMark = 1 << 24

// enterPoll and exitPoll are enter and exit for Poll.
//
// A Poll entered while another runs (from its handler) panics, after
// undoing its entry: see netdev.NestedPoll.
func (d *Device) enterPoll() bool {
	s := d.state.Add(2 + pollMark)
	if s&1 == 0 && s < 2*pollMark {
		return true
	}
	d.exitPoll()
	if s&1 == 0 {
		netdev.NestedPoll("afxdp")
	}
	return false
}

func (d *Device) exitPoll() {
	if d.rxTaken != 0 {
		// A handler panicked mid-chunk: the descriptors already
		// turned into buffers leave the rx ring, so that no later
		// Poll hands their frames over again (Wait refills the fill
		// ring with them once freed).
		d.sock.RX.Consume(d.rxTaken)
		d.sock.RX.Release()
		d.rxTaken = 0
	}
	if d.state.Add(-(2 + pollMark)) == 1 {
		d.teardown()
	}
}

// Ifname returns the interface's name.
func (d *Device) Ifname() string { return d.ifname }

// Queue returns the queue index the socket is bound to.
func (d *Device) Queue() int { return d.queue }

// HardwareAddr returns a copy of the interface's MAC address, as it was at
// Open.
func (d *Device) HardwareAddr() net.HardwareAddr { return slices.Clone(d.mac) }

// MTU returns the interface's MTU in bytes, as it was at Open; Xmit takes
// frames up to MTU+18 bytes (Ethernet header and one VLAN tag).
func (d *Device) MTU() int { return d.mtu }

// Mode returns the attach and bind modes Open obtained. Safe for concurrent
// use.
func (d *Device) Mode() Mode { return d.mode }

// Pool returns the pool the device's buffers come from: Config.Pool, or the
// pool Open made (whose contiguous class is the UMEM), which Close closes.
func (d *Device) Pool() *pool.Pool { return d.up }

// FrameSize returns the UMEM frame size in bytes.
func (d *Device) FrameSize() int { return d.frameSize }

// Cache returns the pool cache of the device's goroutine, a cache of Pool:
// the driver takes receive frames from it and frees transmitted buffers into
// it.
func (d *Device) Cache() *pool.Cache { return d.uc }

// Alloc returns an empty buffer in a UMEM frame, with the pool's headroom and
// at least size bytes of tailroom, which Xmit sends without copying. A
// buffer from Cache().Alloc of a size that fits a smaller class of the pool
// (the copybreak class of a pool the driver made) is copied at Xmit instead.
// With a private UMEM (Mode.PrivateUMEM) it is Cache().Alloc(size): every
// frame is copied. The caller owns the returned buffer and must Free it or
// pass it on to a function that takes ownership. It returns skb.ErrTooBig
// when size does not fit a frame, pool.ErrExhausted, or netdev.ErrClosed.
func (d *Device) Alloc(size int) (*skb.Buff, error) {
	if size > d.allocSize {
		return nil, skb.ErrTooBig
	}
	if !d.enter() {
		return nil, d.cerr.alloc
	}
	defer d.exit()
	if d.mode.PrivateUMEM {
		return d.uc.Alloc(size)
	}
	b, err := d.cache.Alloc(d.allocSize)
	if err != nil {
		d.reap()
		b, err = d.cache.Alloc(d.allocSize)
	}
	return b, err
}

// inUMEM reports whether b's data is a whole UMEM frame of this device's
// pool, in one piece (linear).
func (d *Device) inUMEM(b *skb.Buff) bool {
	return b.End() == d.frameSize && !b.IsNonlinear() && d.p.Owns(b)
}

// TxAvail returns how many frames Xmit can queue before it rings the
// doorbell itself: the batch left, bounded by the free tx ring slots.
func (d *Device) TxAvail() int {
	if !d.enter() {
		return 0
	}
	defer d.exit()
	if d.sock.TX.Size() == 0 {
		return 0
	}
	return int(d.sock.TX.Free(d.batch - d.txQueued))
}

// Xmit queues b for transmission and rings the doorbell when more is false,
// when Batch frames are queued, or when the tx ring is full (seed 002,
// xmit_more). A buffer whose data is a linear UMEM frame of this device's
// pool is sent from where it lies; any other is copied into a UMEM frame
// and freed at once. Xmit takes ownership of b, also when it returns an
// error; the driver frees b when the kernel completes it (seed 000, no
// clone).
//
// It returns ErrShortFrame or netdev.ErrTooBig (b dropped and counted),
// netdev.ErrQueueFull when the tx ring stayed full after the doorbell, the
// pool's ErrExhausted (wrapped) when no UMEM frame was free for a copy,
// an error matching netdev.ErrClosed after Close (b freed and counted in
// tx_dropped_closed), or the doorbell's error.
func (d *Device) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("afxdp", b)
	}
	if !d.enter() {
		b.Free()
		d.ctr.TxDrop(netdev.DropClosed, 1)
		return d.cerr.xmit
	}
	defer d.exit()
	n := b.Len()
	if n < ethHeaderLen || n > d.maxLen {
		d.uc.Free(b)
		if n < ethHeaderLen {
			d.ctr.TxDrop(netdev.DropMalformed, 1)
			return d.endBatch(more, ErrShortFrame)
		}
		d.ctr.TxDrop(netdev.DropTooBig, 1)
		return d.endBatch(more, netdev.ErrTooBig)
	}
	tx := &d.sock.TX
	if tx.Free(1) == 0 {
		d.ctr.TxRingFull()
		err := d.doorbell()
		if tx.Free(1) == 0 {
			d.uc.Free(b)
			d.ctr.TxDrop(netdev.DropRingFull, 1)
			if err != nil {
				return err
			}
			return netdev.ErrQueueFull
		}
	}
	var addr uint64
	if d.inUMEM(b) && d.txBufs[b.HeadAddr()>>d.shift] == nil {
		d.txBufs[b.HeadAddr()>>d.shift] = b
		addr = b.HeadAddr() + uint64(b.Headroom())
	} else {
		f, err := d.cache.Alloc(d.allocSize)
		if err != nil {
			d.reap()
			if f, err = d.cache.Alloc(d.allocSize); err != nil {
				d.uc.Free(b)
				d.ctr.TxDrop(netdev.DropNoBuffer, 1)
				return d.endBatch(more, d.errNoBuf)
			}
		}
		b.CopyBits(0, f.Put(n))
		d.uc.Free(b)
		d.txCopied.Add(1)
		d.txBufs[f.HeadAddr()>>d.shift] = f
		addr = f.HeadAddr() + uint64(f.Headroom())
	}
	desc := &tx.Descs[tx.Index(0)]
	desc.Addr = addr
	desc.Len = uint32(n)
	desc.Options = 0
	tx.Produce(1)
	d.txQueued++
	if !more || d.txQueued >= d.batch {
		return d.doorbell()
	}
	return nil
}

// endBatch rings the doorbell for what is queued after a dropped frame, so
// that nothing queued is stranded whatever more says, and returns err (the
// drop's error takes precedence).
func (d *Device) endBatch(more bool, err error) error {
	if d.txQueued > 0 {
		d.doorbell()
	}
	return err
}

// Flush rings the doorbell for whatever Xmit queued and frees the buffers
// the kernel completed. It returns the doorbell's error or
// netdev.ErrClosed.
func (d *Device) Flush() error {
	if !d.enter() {
		return d.cerr.flush
	}
	defer d.exit()
	if d.sock.TX.Size() == 0 {
		return nil
	}
	return d.doorbell()
}

// doorbell publishes the tx producer and kicks the kernel (sendto) until it
// took every descriptor, as copy mode needs: the kernel sends at most 32
// (XDP_MAX_TX_SKB_BUDGET) per call and then returns EAGAIN: kick again. It
// returns EBUSY after the device dropped a frame (its queue to the peer was
// full; the descriptor completes all the same): the peer is congested and a
// kick right away would most likely drop the next frame too, so the doorbell
// pauses a moment (back-pressure) before it kicks again. Zero-copy drivers
// that do not ask for a wakeup are not kicked. It frees completed buffers and
// counts what the kernel took.
func (d *Device) doorbell() error {
	tx := &d.sock.TX
	queued := d.txQueued
	d.txQueued = 0
	tx.Submit()
	var err error
	stalls := 0
	last := tx.Consumer()
	for last != tx.Producer() {
		if d.needWakeup && !tx.NeedWakeup() {
			break
		}
		e := d.sock.Kick()
		d.kicks.Add(1)
		switch e {
		case 0, unix.EAGAIN:
		case unix.EBUSY:
			d.kickBusy.Add(1)
			d.txBusy++
		default:
			err = d.kickError(e)
		}
		d.reap()
		cons := tx.Consumer()
		if err != nil || e == 0 || cons == tx.Producer() {
			break
		}
		if e == unix.EBUSY {
			congestionPause()
		}
		if cons == last {
			if stalls++; stalls >= maxKickStalls {
				break
			}
		} else {
			stalls = 0
		}
		last = cons
	}
	d.countTx(queued > 0)
	return err
}

// congestionPause is how long the doorbell waits after the peer dropped a
// frame before it kicks again: about what the peer takes to make room for a
// few frames. It yields to other goroutines first.
func congestionPause() {
	runtime.Gosched()
	for t := time.Now(); time.Since(t) < 2*time.Microsecond; {
	}
}

// kickError wraps a doorbell errno, reusing the last error while the errno
// repeats so that a failing doorbell does not allocate per frame.
func (d *Device) kickError(e unix.Errno) error {
	if d.errKick == nil || d.errnoKick != e {
		d.errKick, d.errnoKick = d.wrap("kick", e), e
	}
	return d.errKick
}

// countTx counts the descriptors the kernel took since the last count as
// sent, less the frames the device dropped (EBUSY), and one doorbell.
func (d *Device) countTx(rang bool) {
	tx := &d.sock.TX
	cons := tx.Consumer()
	packets, bytes := 0, 0
	for i := d.txCounted; i != cons; i++ {
		bytes += int(tx.Descs[i&(tx.Size()-1)].Len)
		packets++
	}
	d.txCounted = cons
	if busy := int(min(d.txBusy, uint32(packets))); busy > 0 {
		// The dropped frames are not known one by one: take off the mean.
		bytes -= bytes / packets * busy
		packets -= busy
		d.txBusy -= uint32(busy)
		d.ctr.TxDrop(netdev.DropKernel, busy)
	}
	if rang {
		d.ctr.TxDoorbell(packets, bytes)
	} else if packets > 0 {
		d.ctr.TxSent(packets, bytes)
	}
}

// reap frees the buffers whose frames the completion ring returned.
func (d *Device) reap() {
	cq := &d.sock.Comp
	n := cq.Peek(cq.Size())
	if n == 0 {
		return
	}
	for k := range n {
		idx := cq.Addrs[cq.Index(k)] >> d.shift
		if idx < d.nframes {
			if b := d.txBufs[idx]; b != nil {
				d.txBufs[idx] = nil
				d.cache.Free(b)
			}
		}
	}
	cq.Consume(n)
	cq.Release()
}

// refill posts free UMEM frames from the cache to the fill ring until the
// kernel holds a fill ring's worth (fill and rx rings together), and wakes
// the kernel if it asks.
func (d *Device) refill() {
	fq := &d.sock.Fill
	// The kernel holds at most a fill ring's worth of buffers, in the fill
	// and rx rings together, as a C receiver that gives back each frame it
	// took: topping the fill ring up for frames still waiting in the rx
	// ring would put up to twice that in flight, double the buffers whose
	// cache lines a receiver cycles through, and hand the refill cold
	// buffers instead of the ones its handler just freed.
	want := int(fq.Size()) - d.posted
	if want <= 0 {
		return
	}
	room := fq.Free(uint32(want))
	k := uint32(0)
	// A chunk of buffers per call to the cache: BenchmarkPollSim measured
	// 31.7 against 35.7 ns per frame for one Alloc per frame (medians of
	// five).
	for k < room {
		bs := d.allocBuf[:min(room-k, uint32(len(d.allocBuf)))]
		n, _ := d.cache.AllocN(bs, d.allocSize)
		for _, b := range bs[:n] {
			addr := d.headAddr(b)
			d.rxBufs[addr>>d.shift] = b
			fq.Addrs[fq.Index(k)] = addr
			k++
		}
		if n < len(bs) {
			break
		}
	}
	if k == 0 {
		return
	}
	d.posted += int(k)
	fq.Produce(k)
	fq.Submit()
	if d.needWakeup && fq.NeedWakeup() {
		d.sock.WakeRx()
	}
}

// Poll hands up to budget received frames to h, in arrival order, each a
// buffer in the UMEM frame the kernel wrote (or, under the copybreak
// threshold, a right-sized copy, the frame going straight back to the fill
// ring), with the Ethernet header at the start of the data, the mac header
// set, Protocol the EtherType and QueueMapping the queue. h owns each
// buffer; freeing it into Cache returns its frame to the fill ring at the
// next Poll. Poll then refills the fill ring and frees completed transmit
// buffers. Descriptors that point outside the frames the driver posted are
// dropped and counted (rx_dropped_malformed). It never blocks; it returns
// an error matching netdev.ErrClosed after Close (with the count handed
// over, when h or another goroutine closed the device: see Close), and,
// every linkPolls Polls that found nothing, the socket's pending error:
// ENETDOWN once the interface was removed (a spinning receiver calls no
// Wait).
func (d *Device) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("afxdp: Poll with a nil handler")
	}
	if !d.enterPoll() {
		return 0, d.cerr.poll
	}
	defer d.exitPoll()
	d.reap()
	rx := &d.sock.RX
	if rx.Size() == 0 || budget <= 0 {
		return 0, nil
	}
	n := rx.Peek(uint32(budget))
	if n == 0 {
		d.refill() // frames the application freed go back to the kernel
		if d.closed() {
			return 0, d.cerr.poll
		}
		if d.empty++; d.empty%linkPolls == 0 {
			return 0, d.sockError("poll")
		}
		return 0, nil
	}
	got := 0
	for {
		c := min(n, pollChunk)
		d.touch(c)
		for k := range c {
			desc := rx.Descs[rx.Index(k)]
			b := d.takeRx(desc.Addr, int(desc.Len))
			d.rxTaken = k + 1
			if b != nil && d.deliver(b, h) {
				got++
			}
			if d.closed() {
				// Closed by the handler, or from another goroutine:
				// the frames not handed over are dropped, and their
				// buffers freed at the teardown as Poll returns.
				d.ctr.RxDrop(netdev.DropClosed, int(n-k-1))
				d.rxTaken = n // all leave the ring: release counts the rest
				return got, d.cerr.poll
			}
		}
		rx.Consume(c)
		rx.Release()
		d.rxTaken = 0
		d.refill()
		if n -= c; n == 0 {
			if d.closed() {
				return got, d.cerr.poll // closed from another goroutine meanwhile
			}
			return got, nil
		}
	}
}

// pollChunk is how many frames Poll takes at a time: it loads their cache
// lines together (touch), hands them up, and refills the fill ring, which
// takes the buffers the handler freed while their lines are still in the
// first-level cache (32 frames' header lines and first frame lines are
// about 8 KiB, a quarter of a first-level cache that the other hyperthread
// shares), and gives the kernel frames back sooner than once per budget.
const pollChunk = 32

// touch loads, for the n descriptors ready in the rx ring, the first two
// cache lines of each frame (of a small frame, its headers and the start of
// its payload) and the two cache lines of its buffer's header that receiving
// and freeing it use, before any of them is used. The kernel wrote the
// frames on another core and the buffers were last used a fill ring ago, so
// these are usually cache misses; taken in the order the code needs them
// they come one after the other, while these independent loads let the CPU
// overlap them. (Measured on the lab: the receiver's user time per frame
// fell from about 800 ns to about 400 ns.) The shared info's line is not
// touched on this path: the header keeps the block's class, and a buffer
// freed as it was received is handed out again without clearing a shared
// info that is already clear.
func (d *Device) touch(n uint32) {
	rx := &d.sock.RX
	mem := d.umem.Bytes()
	var sum int
	for k := range n {
		desc := rx.Descs[rx.Index(k)]
		addr := desc.Addr
		if idx := addr >> d.shift; idx < d.nframes {
			if b := d.rxBufs[idx]; b != nil {
				sum += b.Len() + b.Headroom()
			}
			sum += int(mem[addr])
			// The frame's second line, where a small frame's payload starts.
			if e := addr + uint64(min(desc.Len, 128)) - 1; e>>6 != addr>>6 && e < uint64(len(mem)) {
				sum += int(mem[e])
			}
		}
	}
	d.touched += sum
}

// takeRx turns the rx descriptor (addr, n) into the buffer posted for its
// frame, or counts a drop and returns nil.
func (d *Device) takeRx(addr uint64, n int) *skb.Buff {
	idx := addr >> d.shift
	if idx >= d.nframes || d.rxBufs[idx] == nil {
		d.ctr.RxDrop(netdev.DropMalformed, 1)
		return nil
	}
	b := d.rxBufs[idx]
	d.rxBufs[idx] = nil
	d.posted--
	off := int(addr & uint64(d.frameSize-1))
	hr := b.Headroom()
	if off < hr || n < ethHeaderLen || off+n > d.frameSize {
		d.cache.Free(b)
		d.ctr.RxDrop(netdev.DropMalformed, 1)
		return nil
	}
	if off > hr {
		b.Reserve(off - hr)
	}
	data := b.Put(n)
	b.ResetMacHeader()
	b.SetProtocol(uint16(data[12])<<8 | uint16(data[13]))
	b.SetQueueMapping(d.queue)
	return b
}

// deliver hands b to h: as it is, as a copybreak copy, or, with a private
// UMEM, as a copy in the application's pool. It reports false when no buffer
// was left for the copy (counted as rx_dropped_nobuf).
func (d *Device) deliver(b *skb.Buff, h netdev.Handler) bool {
	n := b.Len()
	switch {
	case d.mode.PrivateUMEM:
		c := d.copyOut(d.uc, b)
		d.cache.Free(b)
		if c == nil {
			d.ctr.RxDrop(netdev.DropNoBuffer, 1)
			return false
		}
		b = c
		if n < d.copybreak {
			d.ctr.RxCopybreak()
		}
	case n < d.copybreak:
		// Seed 001: a right-sized copy, the frame straight back to the
		// fill ring. When no small buffer is left, the frame itself goes.
		if c := d.copyOut(d.cache, b); c != nil {
			d.cache.Free(b)
			b = c
			d.ctr.RxCopybreak()
		}
	}
	d.ctr.RxPacket(n)
	h(b)
	return true
}

// copyOut copies b's frame into a buffer from c with copyHeadroom bytes of
// headroom, from the smallest class that holds it, and sets the copy's
// metadata as takeRx set b's. It returns nil when c has no buffer. Only the
// frame is copied: the headroom's bytes mean nothing yet.
func (d *Device) copyOut(c *pool.Cache, b *skb.Buff) *skb.Buff {
	n := b.Len()
	hr := c.Headroom()
	extra := max(0, d.copyHeadroom-hr)
	nb, err := c.Alloc(n + extra)
	if err != nil {
		return nil
	}
	if extra > 0 {
		nb.Reserve(extra)
	}
	copy(nb.Put(n), b.Data())
	nb.ResetMacHeader()
	nb.SetProtocol(b.Protocol())
	nb.SetQueueMapping(d.queue)
	return nb
}

// Wait blocks until the rx ring holds a frame (nil), timeout passes
// (netdev.ErrTimeout; a negative timeout waits without limit), the device
// is closed (netdev.ErrClosed; Close wakes it) or its interface is removed
// (ENETDOWN, "afxdp: wait <ifname> queue <n>: network is down", seen
// within pollSlice, 100 ms), by the Config's WaitPolicy:
// sleeping Config.Sleep at a time, spinning, or in poll(2). It refills the
// fill ring first, so that frames the application freed can be received.
func (d *Device) Wait(timeout time.Duration) error {
	if !d.enter() {
		return d.cerr.wait
	}
	defer d.exit()
	rx := &d.sock.RX
	if rx.Size() != 0 {
		d.reap()
		d.refill()
	}
	ready := func() bool { return rx.Size() != 0 && rx.Peek(1) != 0 }
	if ready() {
		return nil
	}
	if timeout == 0 {
		return netdev.ErrTimeout
	}
	checked := time.Now() // the last look at the socket's pending error
	deadline := checked.Add(timeout)
	// left returns the time to the deadline, capped at max; ok false once
	// it passed.
	left := func(max time.Duration) (time.Duration, bool) {
		if timeout < 0 {
			return max, true
		}
		l := time.Until(deadline)
		return min(l, max), l > 0
	}
	for i := 0; ; i++ {
		switch d.cfg.Wait {
		case WaitSpin:
			if i&1023 != 1023 {
				if ready() {
					return nil
				}
				continue
			}
			runtime.Gosched()
		case WaitPoll:
			l, ok := left(pollSlice)
			if !ok {
				return d.timedOut()
			}
			d.ts = unix.NsecToTimespec(int64(l))
			d.pfds[0].Revents, d.pfds[1].Revents = 0, 0
			unix.Ppoll(d.pfds[:], &d.ts, nil)
		default:
			l, ok := left(d.cfg.Sleep)
			if !ok {
				return d.timedOut()
			}
			nap.Sleep(min(l, sleepSlice))
			if i%nap.YieldEvery == nap.YieldEvery-1 {
				// The raw sleep holds the P: let other goroutines have it
				// now and then.
				runtime.Gosched()
			}
		}
		if ready() {
			return nil
		}
		if d.closed() {
			return d.cerr.wait
		}
		if _, ok := left(0); !ok {
			return d.timedOut()
		}
		if d.cfg.Wait == WaitPoll || i&1023 == 1023 {
			// Every pollSlice, a look at the socket's pending error: the
			// removal of the interface wakes no poll(2) and fills no ring.
			if now := time.Now(); now.Sub(checked) >= pollSlice {
				checked = now
				if err := d.sockError("wait"); err != nil {
					return err
				}
			}
		}
	}
}

// timedOut returns Wait's error once its timeout passed: the socket's
// pending error, or netdev.ErrTimeout.
func (d *Device) timedOut() error {
	if err := d.sockError("wait"); err != nil {
		return err
	}
	return netdev.ErrTimeout
}

// pollSlice is the longest one poll(2) of a WaitPoll Wait sleeps, and how
// often a Wait looks at the socket's pending error.
const pollSlice = 100 * time.Millisecond

// linkPolls is after how many empty Polls (a power of two) a spinning
// receiver's Poll looks at the socket's pending error, the only sign of a
// removed interface it could otherwise miss.
const linkPolls = 1 << 16

// sockError returns the socket's pending error (SO_ERROR: ENETDOWN once
// the interface was removed, which the kernel also unbinds the socket
// from) as op's error, or nil.
func (d *Device) sockError(op string) error {
	if e, err := unix.GetsockoptInt(d.sock.FD(), unix.SOL_SOCKET, unix.SO_ERROR); err == nil && e != 0 {
		return d.wrap(op, unix.Errno(e))
	}
	return nil
}

// Stats returns the device's counters, with the frames the kernel dropped
// before the rx ring (XDPStats.RxDropped and RxRingFull) as
// rx_dropped_kernel. Safe for concurrent use.
func (d *Device) Stats() netdev.Stats {
	s := d.ctr.Snapshot()
	ks, err := d.XDPStats()
	if err == nil {
		s.RxDropped[netdev.DropKernel] += ks.RxDropped + ks.RxRingFull
	}
	return s
}

// XDPStats returns the socket's kernel counters (XDP_STATISTICS) and the
// driver's kick counts; after Close, the last values read at Close. Safe for
// concurrent use. It returns the getsockopt error.
func (d *Device) XDPStats() (XDPStats, error) {
	if !d.readers.Enter(d.closed) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.lastXStat, nil
	}
	defer d.readers.Exit()
	return d.xdpStats()
}

func (d *Device) xdpStats() (XDPStats, error) {
	st, err := d.sock.Statistics()
	if err != nil {
		return XDPStats{}, d.wrap("statistics", err)
	}
	return XDPStats{
		RxDropped:       st.Rx_dropped,
		RxInvalidDescs:  st.Rx_invalid_descs,
		TxInvalidDescs:  st.Tx_invalid_descs,
		RxRingFull:      st.Rx_ring_full,
		RxFillRingEmpty: st.Rx_fill_ring_empty_descs,
		TxRingEmpty:     st.Tx_ring_empty_descs,
		Kicks:           d.kicks.Load(),
		KickBusy:        d.kickBusy.Load(),
		TxCopied:        d.txCopied.Load(),
	}, nil
}

// Close detaches the XDP program, closes the socket, unmaps the rings, frees
// the buffers posted for receive or queued for transmit (frames the kernel
// had taken since the last count count as sent, those it had not as
// tx_dropped_closed; frames waiting in the rx ring count as
// rx_dropped_closed) and, when the driver made the pool, closes it: that
// fails, wrapping pool.ErrLeak, if the application still holds buffers
// from it. Those buffers stay valid and may be freed after Close; the
// pool's arenas stay mapped until then, and a later Pool().Close unmaps
// them. Safe for concurrent use: it wakes a Wait in
// progress and, when another goroutine is inside a method, the teardown
// happens as that method returns (Close waits up to a second for it). Later
// calls return netdev.ErrClosed. It must not race with the owner using the
// Cache outside the device's methods (netdev.Device.Cache): stop such an
// owner first.
//
// Called while Poll runs (from its handler, or from another goroutine) it
// does not wait: Poll hands nothing more over, counts the frames it had
// taken from the rx ring and not handed over in rx_dropped_closed, and
// returns ErrClosed with its count; the teardown happens as it returns, and
// an error of the teardown (a pool.ErrLeak) is then not reported.
func (d *Device) Close() error {
	// Hold a reference while waking, so that the teardown (and the close of
	// the eventfd) cannot happen before the wakeup is written.
	d.state.Add(2)
	for {
		old := d.state.Load()
		if old&1 != 0 {
			d.exit()
			return d.cerr.again
		}
		if d.state.CompareAndSwap(old, old|1) {
			break
		}
	}
	if d.wakeFD >= 0 {
		one := [8]byte{1}
		unix.Write(d.wakeFD, one[:])
	}
	polling := d.state.Load() >= pollMark
	d.exit()
	if polling {
		return nil
	}
	select {
	case <-d.downDone:
	case <-time.After(time.Second):
		return nil
	}
	return d.downErr
}

// teardown releases everything, once: after a failed Open, at Close, or as
// the last method in progress on a closed device returns.
func (d *Device) teardown() {
	d.down.Do(func() {
		// In the table the device was opened in: the process's, also
		// when the last call out is on a thread with a private one
		// (netdev.RunOnThread): the socket, its XDP program and map, the
		// eventfd.
		thread.Release(d.fdPrivate, func() { d.downErr = d.release() })
		close(d.downDone)
	})
}

func (d *Device) release() error {
	d.readers.Wait()
	var errs []error
	if d.xdp != nil {
		if err := d.xdp.release(d.queue); err != nil {
			errs = append(errs, err)
		}
	}
	if d.sock != nil {
		if rx := &d.sock.RX; rx.Size() != 0 {
			// Frames the kernel placed that no Poll took.
			if n := rx.Peek(rx.Size()); n > 0 {
				d.ctr.RxDrop(netdev.DropClosed, int(n))
			}
		}
		if ks, err := d.xdpStats(); err == nil {
			d.mu.Lock()
			d.lastXStat = ks
			d.mu.Unlock()
		}
		if tx := &d.sock.TX; tx.Size() != 0 {
			// What the kernel took since the last count (a NIC that
			// consumes on its own, a poll(2) that sent a stalled
			// ring) was sent; the rest is dropped.
			d.countTx(false)
			if n := tx.Producer() - tx.Consumer(); n > 0 {
				d.ctr.TxDrop(netdev.DropClosed, int(n))
			}
		}
		if err := d.sock.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.wakeFD >= 0 {
		unix.Close(d.wakeFD)
	}
	if d.cache != nil {
		for i, b := range d.rxBufs {
			if b != nil {
				d.cache.Free(b)
				d.rxBufs[i] = nil
			}
		}
		for i, b := range d.txBufs {
			if b != nil {
				d.cache.Free(b)
				d.txBufs[i] = nil
			}
		}
		d.posted = 0
		if d.uc != d.cache {
			d.uc.Close()
		}
		d.cache.Close()
	}
	if d.ownPool && d.p != nil {
		if err := d.p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return d.wrap("close", err)
	}
	return nil
}
