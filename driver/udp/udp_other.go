//go:build !linux

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

var errUnsupported = fmt.Errorf("udp: the UDP driver needs Linux (sendmmsg, UDP_SEGMENT, UDP_GRO): %w", errors.ErrUnsupported)

// Device is a UDP socket device. On platforms other than Linux no Device
// can be opened.
type Device struct{}

// Open fails with an error wrapping errors.ErrUnsupported on platforms
// other than Linux.
func Open(cfg Config) (*Device, error) { return nil, errUnsupported }

// Xmit frees b and fails: see Open. A nil or freed b panics (netdev.BadXmit).
func (d *Device) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("udp", b)
	}
	b.Free()
	return errUnsupported
}

// XmitTo frees b and fails: see Open. A nil or freed b panics (netdev.BadXmit).
func (d *Device) XmitTo(b *skb.Buff, dst netip.AddrPort, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("udp", b)
	}
	b.Free()
	return errUnsupported
}

// XmitFrom frees b and fails: see Open. A nil or freed b panics (netdev.BadXmit).
func (d *Device) XmitFrom(b *skb.Buff, src netip.Addr, dst netip.AddrPort, more bool) error {
	return d.XmitTo(b, dst, more)
}

// DstAddr returns the zero Addr: see Open.
func (d *Device) DstAddr() netip.Addr { return netip.Addr{} }

// PktInfo reports false: see Open.
func (d *Device) PktInfo() bool { return false }

// KeepP reports false: see Open.
func (d *Device) KeepP() bool { return false }

// SetDst fails: see Open.
func (d *Device) SetDst(dst netip.AddrPort) error { return errUnsupported }

// Flush fails: see Open.
func (d *Device) Flush() error { return errUnsupported }

// PendingError fails: see Open.
func (d *Device) PendingError() error { return errUnsupported }

// TxAvail returns 0.
func (d *Device) TxAvail() int { return 0 }

// Poll fails: see Open. A nil h panics.
func (d *Device) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("udp: Poll with a nil handler")
	}
	return 0, errUnsupported
}

// BusyPoll fails: see Open. A nil h panics.
func (d *Device) BusyPoll(budget int, h netdev.Handler, timeout time.Duration) (int, error) {
	if h == nil {
		panic("udp: BusyPoll with a nil handler")
	}
	return 0, errUnsupported
}

// Wait fails: see Open.
func (d *Device) Wait(timeout time.Duration) error { return errUnsupported }

// Src returns the zero AddrPort.
func (d *Device) Src() netip.AddrPort { return netip.AddrPort{} }

// Cache returns nil.
func (d *Device) Cache() *pool.Cache { return nil }

// Pool returns nil.
func (d *Device) Pool() *pool.Pool { return nil }

// Stats returns zero counters.
func (d *Device) Stats() netdev.Stats { return netdev.Stats{} }

// LocalAddr returns the zero AddrPort.
func (d *Device) LocalAddr() netip.AddrPort { return netip.AddrPort{} }

// RemoteAddr returns the zero AddrPort.
func (d *Device) RemoteAddr() netip.AddrPort { return netip.AddrPort{} }

// GSO reports false.
func (d *Device) GSO() bool { return false }

// GRO reports false.
func (d *Device) GRO() bool { return false }

// Copybreak returns 0.
func (d *Device) Copybreak() int { return 0 }

// Fd returns -1.
func (d *Device) Fd() int { return -1 }

// Close fails: see Open.
func (d *Device) Close() error { return errUnsupported }

var _ netdev.BusyPoller = (*Device)(nil)
