package traffic

import "errors"

var (
	// ErrConfig is returned by NewPktgen, NewSink, PingPong and Echo for an
	// invalid config: a size, burst, flow count or rate out of range, a
	// GSO run on a device that does not segment, or a link-layer mode
	// without the addresses it needs.
	ErrConfig = errors.New("traffic: invalid config")

	// ErrFailing is returned by Pktgen.Run when 64 sends in a row failed
	// (transmit errors, or packets the device dropped) and none went out
	// meanwhile: the destination or the device refuses every packet, a
	// link has no carrier, an interface was removed (the error wraps the
	// first transmit error, or names the device's drop counters).
	ErrFailing = errors.New("traffic: every send fails")

	// ErrNoReply is returned by PingPong when its first NoReplyTries
	// requests got no reply within the timeout: nothing answers at the
	// destination, or nothing answers with the request's payload whole
	// (such replies count in PingPongResult.Stray).
	ErrNoReply = errors.New("traffic: no reply")
)
