package lab

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/vishvananda/netns"
)

// RecordDir holds one JSON record per lab, named <name>.json, written before
// the lab's namespaces are made and removed after they are gone. The record
// names the owning process (pid and start time), so Cleanup can tell a lab
// in use from one whose process was killed. It lives on /run, a tmpfs: like
// the lab itself, it does not survive a reboot. The environment variable
// named by RecordDirEnv, when set, names another directory: a process that
// sets it sees, lists and cleans up only the labs recorded there (tests use
// it to keep `skb lab down --all` away from labs of other tests).
const RecordDir = "/run/skb/lab"

// RecordDirEnv is the environment variable that overrides RecordDir.
const RecordDirEnv = "SKB_LAB_DIR"

// recordDir returns the directory of lab records in use: RecordDirEnv's value
// or RecordDir.
func recordDir() string {
	if d := os.Getenv(RecordDirEnv); d != "" {
		return d
	}
	return RecordDir
}

// Host is one side of a lab: a network namespace holding one end of the veth
// pair. Its fields are set by New or Open and must not be changed. NS is an
// open handle (a file descriptor) that stays valid until the lab's Close or
// Release. A Host is safe for concurrent use; its methods fail with an error
// matching net.ErrClosed after Close or Release.
type Host struct {
	NSName  string           // namespace name as `ip netns list` shows it (bind mount in /run/netns)
	NS      netns.NsHandle   // handle to the namespace, valid until Close or Release
	Ifname  string           // the veth end in this namespace
	Ifindex int              // its interface index inside the namespace
	MAC     net.HardwareAddr // its MAC address (MACA or MACB)
	MTU     int              // its MTU in bytes, as the kernel reports it
	Addr    netip.Addr       // AddrA (198.18.0.1) or AddrB (198.18.0.2)
	Prefix  netip.Prefix     // Prefix, 198.18.0.0/24
	Addr6   netip.Addr       // Addr6A or Addr6B when Options.IPv6, else the zero Addr
	Prefix6 netip.Prefix     // Prefix6 when Options.IPv6, else the zero Prefix

	lab *Lab
}

// Lab is a two-host testbed: two network namespaces, A and B, joined by a veth
// pair, with addresses and permanent neighbour entries on both ends, so that
// each side reaches the other without ARP. Its methods are safe for concurrent
// use; Close must be called to remove it (or Release to leave it in place).
type Lab struct {
	Name    string  // the name stem (Options.Name, or the generated one)
	Options Options // the options it was made with, Name filled in
	A, B    Host    // side A (198.18.0.1) and side B (198.18.0.2)

	mu     sync.RWMutex // held for reading while a namespace handle is used
	closed bool         // set under mu by Close and Release
	once   sync.Once
	rec    record
}

// Info describes a recorded lab, as List returns it.
type Info struct {
	Name    string    `json:"name"`
	NSA     string    `json:"ns_a"`
	NSB     string    `json:"ns_b"`
	IfA     string    `json:"if_a"`
	IfB     string    `json:"if_b"`
	PID     int       `json:"pid"`     // the process that made it
	Alive   bool      `json:"alive"`   // whether that process still runs
	Persist bool      `json:"persist"` // made with Options.Persist
	Created time.Time `json:"created"`
	// Options are those the lab was made with: a later change (such as
	// SetThreaded, or skb lab threaded) is not recorded; ask the lab
	// itself (Host.Threaded, ethtool -k) for its state now.
	Options Options `json:"options"`
}

// Stale reports whether Cleanup removes the lab: it was not made to persist
// and the process that made it is gone.
func (i Info) Stale() bool { return !i.Persist && !i.Alive }

// record is the JSON kept in the record directory as <name>.json.
type record struct {
	Name    string    `json:"name"`
	NSA     string    `json:"ns_a"`
	NSB     string    `json:"ns_b"`
	IfA     string    `json:"if_a"`
	IfB     string    `json:"if_b"`
	PID     int       `json:"pid"`
	Start   uint64    `json:"start"` // field 22 of /proc/<pid>/stat, to tell a reused pid
	Created time.Time `json:"created"`
	Options Options   `json:"options"`
}

func newRecord(name string, opts Options) record {
	return record{
		Name:    name,
		NSA:     name + "A",
		NSB:     name + "B",
		IfA:     name + "A0",
		IfB:     name + "B0",
		Created: time.Now().UTC().Truncate(time.Second),
		Options: opts,
	}
}
