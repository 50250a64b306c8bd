//go:build !linux

package afpacket

import (
	"errors"
	"fmt"
	"time"

	"github.com/skbdev/skb/header"
	"github.com/skbdev/skb/netdev"
	"github.com/skbdev/skb/pool"
	"github.com/skbdev/skb/skb"
)

// Device is an AF_PACKET device; AF_PACKET exists on Linux only, so off Linux
// no Device can be opened.
type Device struct{}

// RingStats are the counters of an AF_PACKET device beyond netdev.Stats.
type RingStats struct {
	RxUnparsed, RxOutgoing, RxBlocks, RxFreezes uint64
}

func unsupported(cfg *Config) error {
	return openError(cfg.Ifname, errors.ErrUnsupported)
}

// Open returns an error wrapping errors.ErrUnsupported off Linux.
func Open(cfg Config) (*Device, error) { return nil, unsupported(&cfg) }

// OpenFanout returns an error wrapping errors.ErrUnsupported off Linux.
func OpenFanout(cfg Config, n int) ([]*Device, error) { return nil, unsupported(&cfg) }

var errClosed = fmt.Errorf("afpacket: %w", netdev.ErrClosed)

// Xmit frees b and returns an error matching net.ErrClosed; a nil or freed b panics (netdev.BadXmit).
func (d *Device) Xmit(b *skb.Buff, more bool) error {
	if b == nil || !b.IsLive() {
		netdev.BadXmit("afpacket", b)
	}
	b.Free()
	return errClosed
}

// Flush returns an error matching net.ErrClosed.
func (d *Device) Flush() error { return errClosed }

// TxAvail returns 0.
func (d *Device) TxAvail() int { return 0 }

// Poll returns an error matching net.ErrClosed; a nil h panics.
func (d *Device) Poll(budget int, h netdev.Handler) (int, error) {
	if h == nil {
		panic("afpacket: Poll with a nil handler")
	}
	return 0, errClosed
}

// Wait returns an error matching net.ErrClosed.
func (d *Device) Wait(timeout time.Duration) error { return errClosed }

// Cache returns nil.
func (d *Device) Cache() *pool.Cache { return nil }

// Stats returns zero counters.
func (d *Device) Stats() netdev.Stats { return netdev.Stats{} }

// RingStats returns zero counters.
func (d *Device) RingStats() RingStats { return RingStats{} }

// Close returns an error matching net.ErrClosed.
func (d *Device) Close() error { return errClosed }

// Ifname returns "".
func (d *Device) Ifname() string { return "" }

// Ifindex returns 0.
func (d *Device) Ifindex() int { return 0 }

// MTU returns 0.
func (d *Device) MTU() int { return 0 }

// HardwareAddr returns the zero MAC.
func (d *Device) HardwareAddr() header.MAC { return header.MAC{} }

// TxMode returns TxDefault.
func (d *Device) TxMode() TxMode { return TxDefault }

// FanoutGroup returns 0.
func (d *Device) FanoutGroup() uint16 { return 0 }

// GSOFrames returns false.
func (d *Device) GSOFrames() bool { return false }

// ChecksumStates returns false.
func (d *Device) ChecksumStates() bool { return false }
