package afxdp

import (
	"fmt"
	"time"

	"github.com/skbdev/skb/netdev"
)

// Defaults, chosen as the C reference (xsk_tx, xsk_rx) chooses them.
const (
	// DefaultFrameSize is the UMEM frame (chunk) size in bytes: one pool
	// block, holding the XDP headroom and a 1514-byte Ethernet frame.
	DefaultFrameSize = 2048
	// DefaultFrames is the number of UMEM frames of a pool the driver makes:
	// a full fill ring plus as many again for transmit and for received
	// buffers the application holds.
	DefaultFrames = 4096
	// DefaultRingSize is the number of entries of each of the four rings.
	DefaultRingSize = 2048
	// PollBudget is the Poll budget, in frames, that suits a receiver
	// freeing each frame at once (a sink, a forwarder): a quarter of the
	// default ring, so that it takes what is ready in a few calls, as an
	// AF_XDP receiver written in C takes all of it. With threaded NAPI on
	// the receiver's CPU, 64 at a time took in a quarter fewer frames
	// (0.82 against 1.07 Mpps, medians of 5 alternating pairs of runs).
	PollBudget = DefaultRingSize / 4
	// DefaultSleep is how long WaitSleep sleeps when the rx ring is empty, as
	// the C reference's `-w usleep:50`.
	DefaultSleep = 50 * time.Microsecond
	// XDPHeadroom is the headroom the kernel leaves in front of every frame it
	// receives into the UMEM, in bytes (XDP_PACKET_HEADROOM): received buffers
	// have at least this much headroom, whatever Config.Headroom asks.
	XDPHeadroom = 256
)

// WaitPolicy says how Wait waits for received frames. The zero value is
// WaitSleep.
type WaitPolicy uint8

const (
	// WaitSleep looks at the rx ring and sleeps Config.Sleep (nanosleep(2))
	// when it is empty: the kernel is never asked to wake the process, so
	// the sender's core does no wakeup work, and the receiver's core stays
	// mostly idle. Full speed without a spinning core; the default.
	WaitSleep WaitPolicy = iota
	// WaitSpin looks at the rx ring in a loop: lowest latency, one core
	// busy all the time.
	WaitSpin
	// WaitPoll blocks in poll(2) until the socket is readable: no cost while
	// idle, but every wakeup costs the sender's core a wakeup of this one
	// (about 23 us for a halted vCPU).
	WaitPoll
)

// String returns "sleep", "spin" or "poll".
func (w WaitPolicy) String() string {
	switch w {
	case WaitSleep:
		return "sleep"
	case WaitSpin:
		return "spin"
	case WaitPoll:
		return "poll"
	}
	return fmt.Sprintf("WaitPolicy(%d)", uint8(w))
}

// ParseWaitPolicy returns the policy whose String is s ("sleep", "spin" or
// "poll"), or an error wrapping ErrConfig for any other word.
func ParseWaitPolicy(s string) (WaitPolicy, error) {
	for _, w := range []WaitPolicy{WaitSleep, WaitSpin, WaitPoll} {
		if s == w.String() {
			return w, nil
		}
	}
	return 0, fmt.Errorf("afxdp: %w", netdev.ConfigErrorf(ErrConfig, "wait policy %q: want sleep, spin or poll", s))
}

// AttachMode is how the XDP program is attached to the interface
// (XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE). The zero value is AttachAuto.
type AttachMode uint8

const (
	// AttachAuto tries native mode and falls back to generic mode.
	AttachAuto AttachMode = iota
	// AttachNative runs the program in the driver's receive path (native
	// XDP, XDP_FLAGS_DRV_MODE); veth has it.
	AttachNative
	// AttachGeneric runs the program after the kernel built its sk_buff
	// (generic or SKB mode, XDP_FLAGS_SKB_MODE): any device, slower.
	AttachGeneric
	// AttachNone: no program (a transmit-only device, Config.TxOnly).
	AttachNone
)

// String returns "auto", "native", "generic" or "none".
func (m AttachMode) String() string {
	switch m {
	case AttachAuto:
		return "auto"
	case AttachNative:
		return "native"
	case AttachGeneric:
		return "generic"
	case AttachNone:
		return "none"
	}
	return fmt.Sprintf("AttachMode(%d)", uint8(m))
}

// BindMode is how the socket is bound to its queue (XDP_ZEROCOPY, XDP_COPY).
// The zero value is BindAuto.
type BindMode uint8

const (
	// BindAuto tries zero-copy and falls back to copy mode.
	BindAuto BindMode = iota
	// BindZeroCopy: the driver moves frames to and from the UMEM itself
	// (XDP_ZEROCOPY). veth refuses it (EOPNOTSUPP).
	BindZeroCopy
	// BindCopy: the kernel copies each frame between its sk_buff or
	// xdp_buff and the UMEM (XDP_COPY). Works on every device.
	BindCopy
)

// String returns "auto", "zerocopy" or "copy".
func (m BindMode) String() string {
	switch m {
	case BindAuto:
		return "auto"
	case BindZeroCopy:
		return "zerocopy"
	case BindCopy:
		return "copy"
	}
	return fmt.Sprintf("BindMode(%d)", uint8(m))
}

// Mode is what Open obtained from the kernel: the program's attach mode and
// the socket's bind mode, never the Auto values.
type Mode struct {
	Attach AttachMode // AttachNative, AttachGeneric or AttachNone
	Bind   BindMode   // BindZeroCopy or BindCopy
	// NativeErr and ZeroCopyErr say why AttachAuto and BindAuto fell back
	// (nil when they did not): the kernel's refusal, wrapped.
	NativeErr   error
	ZeroCopyErr error
	// PrivateUMEM: Config.Pool has no contiguous class of the frame size, so
	// the UMEM is a pool of the driver's own and every frame is copied
	// between it and Config.Pool, both ways.
	PrivateUMEM bool
}

// String returns the modes as the tool prints them, such as
// "xdp native, bind copy" (", private umem" added when frames are copied
// to and from Config.Pool).
func (m Mode) String() string {
	s := "xdp " + m.Attach.String() + ", bind " + m.Bind.String()
	if m.PrivateUMEM {
		s += ", private umem"
	}
	return s
}

// Config configures a Device. The zero Config is usable: a pool of its own
// with DefaultFrames frames of DefaultFrameSize bytes, rings of
// DefaultRingSize, both directions, WaitSleep, native XDP and zero-copy where
// the kernel allows.
type Config struct {
	// Pool, Headroom, Copybreak and Batch as netdev.Config says, with these
	// AF_XDP rules. A Pool with a Contiguous class whose Size is FrameSize
	// (or 2048 or 4096 when FrameSize is 0) has that class registered as the
	// UMEM: frames move without a copy. A Pool without one still works, with
	// a UMEM of the driver's own (Mode.PrivateUMEM): every frame is copied
	// between it and Pool, both ways. Received frames start XDPHeadroom
	// bytes into their block plus whatever more Headroom (or the pool's
	// headroom) asks, so receive headroom is at least 256 bytes. Copybreak
	// copies into the pool's largest class smaller than a UMEM frame; a
	// pool without one turns copybreak off. Batch is the number of frames
	// Xmit queues before it rings the doorbell itself, and Poll's largest
	// useful budget.
	netdev.Config

	// FrameSize is the UMEM frame (chunk) size in bytes: 2048 or 4096 (a
	// power of two from 2048 to the page size, xdp_umem_reg). 0 means
	// DefaultFrameSize, or the size of the pool's contiguous class.
	FrameSize int
	// Frames is the number of UMEM frames in a pool the driver makes; 0
	// means DefaultFrames. It must be at least RingSize, since Open fills
	// the fill ring.
	Frames int
	// RingSize is the number of entries of the fill, completion, rx and tx
	// rings, a power of two; 0 means DefaultRingSize.
	RingSize int

	// Wait is Wait's policy and Sleep its sleep for WaitSleep (0 means
	// DefaultSleep; a Sleep over 10 ms is slept in 10 ms slices, between
	// which Wait looks at the rx ring and for Close).
	Wait  WaitPolicy
	Sleep time.Duration

	// Attach and Bind choose the attach and bind modes; Auto (the zero
	// value) tries native and zero-copy first. Mode reports what was chosen.
	Attach AttachMode
	Bind   BindMode

	// TxOnly makes a transmit-only device: no rx ring and no XDP program, so
	// the interface's receive path is left alone; the fill ring stays empty.
	TxOnly bool

	// TxBudget, when positive, sets how many descriptors one doorbell system
	// call may send in copy mode (XDP_MAX_TX_SKB_BUDGET, Linux 6.17 and later;
	// the kernel's default is 32). Open fails where the kernel refuses it.
	TxBudget int
}

// resolved is a Config with the defaults filled in and checked.
func (c Config) resolved() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, netdev.ConfigErrorf(ErrConfig, format, args...)
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
	}
	if c.Frames == 0 {
		c.Frames = DefaultFrames
	}
	if c.Sleep == 0 {
		c.Sleep = DefaultSleep
	}
	switch {
	case c.FrameSize != 0 && c.FrameSize != 2048 && c.FrameSize != 4096:
		return bad("frame size %d: want 2048 or 4096", c.FrameSize)
	case c.RingSize < 0 || c.RingSize&(c.RingSize-1) != 0:
		return bad("ring size %d: want a power of two", c.RingSize)
	case c.Pool == nil && c.Frames < c.RingSize:
		return bad("%d frames cannot fill a fill ring of %d", c.Frames, c.RingSize)
	case c.Wait > WaitPoll:
		return bad("wait policy %d", c.Wait)
	case c.Sleep < 0:
		return bad("sleep %v is negative", c.Sleep)
	case c.Attach > AttachNone:
		return bad("attach mode %d", c.Attach)
	case c.Attach == AttachNone && !c.TxOnly:
		return bad("attach mode none needs TxOnly: nothing would redirect frames to the socket")
	case c.Bind > BindCopy:
		return bad("bind mode %d", c.Bind)
	case c.TxBudget < 0:
		return bad("tx budget %d is negative", c.TxBudget)
	case c.Headroom < 0:
		return bad("headroom %d is negative", c.Headroom)
	}
	return c, nil
}

var _ netdev.Device = (*Device)(nil)
