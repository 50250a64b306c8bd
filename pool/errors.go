package pool

import (
	"errors"

	"github.com/skbdev/skb/skb"
)

var (
	// ErrExhausted is returned by the allocation functions when a bounded class
	// (Class.Max) has no free block; they never block waiting for one.
	ErrExhausted = errors.New("pool: exhausted")

	// ErrTooBig is returned when no size class holds the requested bytes
	// (plus the headroom, for the allocations that reserve it: Alloc and
	// AllocN, not AllocShared). It is skb.ErrTooBig, so either name
	// matches.
	ErrTooBig = skb.ErrTooBig

	// ErrClosed is returned by the Pool's allocation functions after Close,
	// and by Close once a Close has unmapped the arenas. It is not
	// netdev.ErrClosed (net.ErrClosed), which the devices return.
	ErrClosed = errors.New("pool: closed")

	// ErrLeak is returned by Close and CheckLeaks when buffers are still in
	// flight; the arenas of a leaking pool stay mapped so that the stray
	// buffers do not point into unmapped memory.
	ErrLeak = errors.New("pool: buffers still in flight")

	// ErrConfig is wrapped by New's error for an invalid Config, whose
	// message names the field, its value and the rule it breaks.
	ErrConfig = errors.New("pool: invalid config")
)
