package netdev

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/skbdev/skb/skb"
)

var (
	// ErrQueueFull is returned by Xmit when the transmit ring is still full
	// after the doorbell was rung: the packet was dropped (and counted in
	// tx_ring_full and tx_dropped). Callers that must not drop check
	// TxAvail first, or Flush and retry later with a new buffer.
	ErrQueueFull = errors.New("netdev: transmit queue full")

	// ErrConfig is wrapped by Config.Validate's error for settings out of
	// range, and matched (errors.Is) by every driver's configuration error:
	// each driver's own ErrConfig is made with NewConfigError.
	ErrConfig = errors.New("netdev: invalid config")

	// ErrTooBig is returned by Xmit for a packet the device cannot carry
	// (larger than its MTU, with the link-layer header a driver adds to it
	// as its Xmit documents, or than its buffers); the packet was dropped.
	ErrTooBig = errors.New("netdev: packet too big for the device")

	// ErrClosed is returned by every method after Close. It is net.ErrClosed,
	// so errors.Is(err, net.ErrClosed) holds.
	ErrClosed = net.ErrClosed

	// ErrTimeout is returned by Wait when the timeout passed with nothing to
	// receive. It is os.ErrDeadlineExceeded.
	ErrTimeout = os.ErrDeadlineExceeded
)

// ConfigError returns err, an error of Config.Validate, as a driver's Open
// reports it: an error that also matches the driver's own sentinel
// (errors.Is(e, driverErr) and errors.Is(e, ErrConfig) both hold) and whose
// message is err's alone, so that the driver's prefix and the netdev one do
// not both say "invalid config" ("memring: new pair: netdev: invalid
// config: headroom -5 (NoHeadroom, 0 to 4096)"). It returns nil for a nil
// err.
func ConfigError(driverErr, err error) error {
	if err == nil {
		return nil
	}
	return configError{driverErr, err}
}

// NewConfigError returns a new sentinel for a driver's configuration errors
// (its ErrConfig): an error whose message is text, which errors.Is matches
// with itself and with ErrConfig, so that a caller written against netdev
// tests any driver's configuration error with ErrConfig alone.
func NewConfigError(text string) error { return &driverConfig{text} }

// driverConfig is NewConfigError's sentinel; a pointer, so that each is
// distinct.
type driverConfig struct{ text string }

func (e *driverConfig) Error() string        { return e.text }
func (e *driverConfig) Is(target error) bool { return target == ErrConfig }

// ConfigErrorf returns a driver's error for a bad configuration: one that
// matches driverErr (a NewConfigError sentinel, and so ErrConfig) and whose
// message is "invalid config: " and the text formatted as fmt.Sprintf
// does, for the driver to prefix with its package and operation
// ("afpacket: open eth0: invalid config: block count -1").
func ConfigErrorf(driverErr error, format string, a ...any) error {
	return configError{driverErr, fmt.Errorf("invalid config: "+format, a...)}
}

// configError is ConfigError's error: err's message, both errors matched.
type configError struct{ driver, err error }

func (e configError) Error() string   { return e.err.Error() }
func (e configError) Unwrap() []error { return []error{e.driver, e.err} }

// BadXmit panics with the message for driver's Xmit (or XmitTo) given b
// when b is nil or already freed (skb.Buff.IsLive): the caller's bug, caught
// before the buffer is queued, where a freed one would be freed again at the
// doorbell, a double free found only there and with the driver's queue
// half-built. A driver calls it as
//
//	if b == nil || !b.IsLive() {
//		netdev.BadXmit("memring", b)
//	}
//
// which costs one load of the header the driver reads next anyway. It
// never returns.
func BadXmit(driver string, b *skb.Buff) {
	if b == nil {
		panic(driver + ": Xmit of a nil *skb.Buff")
	}
	if b.IsLive() {
		panic(fmt.Sprintf("%s: BadXmit of a live *skb.Buff %p: call it for a nil or freed one only", driver, b))
	}
	panic(fmt.Sprintf("%s: Xmit of a freed *skb.Buff %p (the caller gave up ownership when it freed it, or when it passed it to Xmit before)", driver, b))
}

// NestedPoll panics with the message for driver's Poll called while a Poll
// of the same device runs: from its own handler, or from a second
// goroutine. Poll walks a receive ring or batch whose position the inner
// call would move under the outer one (it would hand packets over twice,
// skip them, or use a buffer it freed), so the caller's bug is caught at
// the inner call's entry. A driver that counts its Polls in progress calls
// it when the count it entered with is not 1, after undoing its entry. It
// never returns.
func NestedPoll(driver string) {
	panic(driver + ": Poll called while a Poll of the same device runs (from its handler, or from another goroutine): a device has one owner goroutine, and a handler must not poll the device it was called from")
}
