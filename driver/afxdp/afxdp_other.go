//go:build !linux

package afxdp

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Device is an AF_XDP queue; AF_XDP exists on Linux only, so here Open
// always fails and a Device is never made. See the Linux documentation.
type Device struct{}

// Open returns an error wrapping errors.ErrUnsupported: AF_XDP is Linux only.
func Open(ifname string, queue int, cfg Config) (*Device, error) {
	return nil, fmt.Errorf("afxdp: open %s queue %d: %w", ifname, queue, errors.ErrUnsupported)
}

// Ifname returns "".
func (d *Device) Ifname() string { return "" }

// Queue returns 0.
func (d *Device) Queue() int { return 0 }

// HardwareAddr returns nil.
func (d *Device) HardwareAddr() net.HardwareAddr { return nil }

// MTU returns 0.
func (d *Device) MTU() int { return 0 }

// Mode returns the zero Mode.
func (d *Device) Mode() Mode { return Mode{} }

// Pool returns nil.
func (d *Device) Pool() *pool.Pool { return nil }

// FrameSize returns 0.
func (d *Device) FrameSize() int { return 0 }

// Cache returns nil.
func (d *Device) Cache() *pool.Cache { return nil }

// Alloc returns netdev.ErrClosed.
func (d *Device) Alloc(size int) (*skb.Buff, error) { return nil, netdev.ErrClosed }

// TxAvail returns 0.
func (d *Device) TxAvail() int { return 0 }

// Xmit frees b and returns netdev.ErrClosed; a nil or freed b panics (netdev.BadXmit).
func (d *Device) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("afxdp", b)
	}
	b.Free()
	return netdev.ErrClosed
}

// Flush returns netdev.ErrClosed.
func (d *Device) Flush() error { return netdev.ErrClosed }

// Poll returns netdev.ErrClosed; a nil h panics.
func (d *Device) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("afxdp: Poll with a nil handler")
	}
	return 0, netdev.ErrClosed
}

// Wait returns netdev.ErrClosed.
func (d *Device) Wait(timeout time.Duration) error { return netdev.ErrClosed }

// Stats returns zero counters.
func (d *Device) Stats() netdev.Stats { return netdev.Stats{} }

// XDPStats returns zero counters and netdev.ErrClosed.
func (d *Device) XDPStats() (XDPStats, error) { return XDPStats{}, netdev.ErrClosed }

// Close returns netdev.ErrClosed.
func (d *Device) Close() error { return netdev.ErrClosed }
