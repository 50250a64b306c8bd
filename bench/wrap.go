package bench

import (
	"net/netip"

	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
	"github.com/skbdev/skb/traffic"
)

// xmitWrap is a datagram device with a step in front of its transmit path
// and, optionally, an allocator of its own: the clone per send of seed 000,
// the encapsulation of seed 004, the heap buffers of seed 003. It belongs to
// the device's goroutine, as the device does.
type xmitWrap struct {
	traffic.AddrXmitter
	// pre turns the buffer to send into the one sent. It takes ownership
	// of b; on error it has freed b.
	pre func(b *skb.Buff) (*skb.Buff, error)
	// alloc, when set, hands out the transmit buffers (traffic.Allocator).
	alloc func(size int) (*skb.Buff, error)
}

// Xmit runs the step, then the device's Xmit. It takes ownership of b, also
// when it returns an error.
func (w *xmitWrap) Xmit(b *skb.Buff, more bool) error {
	if w.pre != nil {
		var err error
		if b, err = w.pre(b); err != nil {
			return err
		}
	}
	return w.AddrXmitter.Xmit(b, more)
}

// XmitTo runs the step, then the device's XmitTo. It takes ownership of b,
// also when it returns an error.
func (w *xmitWrap) XmitTo(b *skb.Buff, dst netip.AddrPort, more bool) error {
	if w.pre != nil {
		var err error
		if b, err = w.pre(b); err != nil {
			return err
		}
	}
	return w.AddrXmitter.XmitTo(b, dst, more)
}

// Alloc returns a transmit buffer from alloc, or from the device's Cache.
// The caller owns it.
func (w *xmitWrap) Alloc(size int) (*skb.Buff, error) {
	if w.alloc != nil {
		return w.alloc(size)
	}
	return w.Cache().Alloc(size)
}

// cloneOnXmit returns the step rxe_send took before seed 000 removed it:
// clone the buffer, send the clone, free the original (skb_clone, then
// kfree_skb of the caller's buffer once the clone is queued).
func cloneOnXmit(c *pool.Cache) func(*skb.Buff) (*skb.Buff, error) {
	return func(b *skb.Buff) (*skb.Buff, error) {
		n := c.Clone(b)
		c.Free(b)
		return n, nil
	}
}

// EncapLen is the outer header the headroom experiment pushes in front of
// every packet: an IPv4 header (20), a UDP header (8), a VXLAN header (8)
// and the inner Ethernet header (14), as a VXLAN tunnel adds (RFC 7348).
const EncapLen = 20 + 8 + 8 + 14

// encapsulator pushes an EncapLen-byte outer header in front of each packet,
// as a tunnel's transmit path does: skb_cow_head first, which reallocates
// the head when the headroom is short (seed 004), then skb_push.
type encapsulator struct {
	cache    *pool.Cache
	hdr      [EncapLen]byte
	packets  uint64
	reallocs uint64
}

func newEncapsulator(c *pool.Cache) *encapsulator {
	e := &encapsulator{cache: c}
	e.hdr[0] = 0x45     // IPv4, 20-byte header
	e.hdr[9] = 17       // UDP
	e.hdr[20+3] = 0xb5  // destination port 4789 (VXLAN)
	e.hdr[20+2] = 0x12  //
	e.hdr[28] = 0x08    // VXLAN flags: VNI valid
	e.hdr[36+12] = 0x08 // inner EtherType IPv4
	return e
}

// push adds the outer header to b. It does not take ownership of b; on
// error b is unchanged.
func (e *encapsulator) push(b *skb.Buff) error {
	e.packets++
	if b.Headroom() < EncapLen || b.Cloned() {
		if b.Headroom() < EncapLen {
			e.reallocs++
		}
		if err := b.CowHead(e.cache, EncapLen); err != nil {
			return err
		}
	}
	copy(b.Push(EncapLen), e.hdr[:])
	return nil
}

// step is push as an xmitWrap step: it frees b on error.
func (e *encapsulator) step(b *skb.Buff) (*skb.Buff, error) {
	if err := e.push(b); err != nil {
		e.cache.Free(b)
		return nil, err
	}
	return b, nil
}
