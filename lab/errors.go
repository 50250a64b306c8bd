package lab

import (
	"errors"
	"os"
)

// Sentinel errors. Errors from this package wrap one of these, or the errno or
// os error that caused them (so errors.Is(err, os.ErrPermission) and
// errors.Is(err, os.ErrExist) work), or both, and read "lab: op: cause".
// Methods called after Close or Release return errors matching net.ErrClosed;
// New on a platform other than Linux returns one matching errors.ErrUnsupported.
var (
	// ErrInvalid is returned by New when Options hold a value that cannot make a
	// lab (a negative count, a name that is not a valid stem, Threaded with GRO
	// Off), and by Toggle.Set and ParseToggle for a word other than on or off.
	// Nothing has been created when New returns it.
	ErrInvalid = errors.New("invalid option")

	// ErrExist is returned by New when a lab of the requested name is
	// already recorded (see RecordDir): made by `skb lab up` or by a process
	// that still runs, or left by one that was killed. It also matches
	// os.ErrExist. Nothing has been created when New returns it.
	ErrExist error = existError{}

	// ErrNotFound is returned by Open and Remove when no lab of that name is
	// recorded (see RecordDir).
	ErrNotFound = errors.New("no such lab")

	// ErrNoNAPI is returned with the kernel's errno by SetThreaded when the veth
	// has no NAPI instance to thread: veth runs NAPI only while GRO is on or an
	// XDP program is attached (drivers/net/veth.c), and the kernel refuses the
	// write to /sys/class/net/<if>/threaded otherwise.
	ErrNoNAPI = errors.New("veth has no NAPI: needs GRO on or an XDP program")

	// ErrOffload is returned by New and SetOffloads when ethtool accepted a
	// change but reading the features back shows that the kernel did not make it,
	// for example TSO on while transmit checksumming is off (ethtool exits 0
	// then and only prints "[requested on]").
	ErrOffload = errors.New("offload not applied")
)

// existError is ErrExist: "lab already exists", matching os.ErrExist too.
type existError struct{}

func (existError) Error() string        { return "lab already exists" }
func (existError) Is(target error) bool { return target == os.ErrExist }
