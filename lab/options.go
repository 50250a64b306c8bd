package lab

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Toggle is a tri-state switch for a device feature: Default leaves the kernel's
// setting alone, On and Off set it. The zero value is Default.
//
// Toggle implements flag.Value (and spf13/pflag's Value), encoding.TextMarshaler
// and encoding.TextUnmarshaler with the words "default", "on" and "off".
type Toggle uint8

// The values of a Toggle.
const (
	Default Toggle = iota // leave the kernel's setting
	On                    // turn the feature on
	Off                   // turn the feature off
)

// ParseToggle returns the Toggle that s names: "on", "off" or "default"
// (also "", "true"/"false", "1"/"0", "yes"/"no", in any case). Any other word
// returns an error wrapping ErrInvalid.
func ParseToggle(s string) (Toggle, error) {
	switch strings.ToLower(s) {
	case "on", "true", "1", "yes":
		return On, nil
	case "off", "false", "0", "no":
		return Off, nil
	case "", "default":
		return Default, nil
	}
	return Default, fmt.Errorf("lab: parse toggle %q: %w: want on or off", s, ErrInvalid)
}

// ToggleOf returns On for true and Off for false.
func ToggleOf(on bool) Toggle {
	if on {
		return On
	}
	return Off
}

// String returns "default", "on" or "off" ("Toggle(n)" for a value out of range).
func (t Toggle) String() string {
	switch t {
	case Default:
		return "default"
	case On:
		return "on"
	case Off:
		return "off"
	}
	return "Toggle(" + strconv.Itoa(int(t)) + ")"
}

// Set parses s as ParseToggle does and stores the result in t; t is unchanged
// on error.
func (t *Toggle) Set(s string) error {
	v, err := ParseToggle(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Type names the flag's value type for command-line help: "on|off".
func (t *Toggle) Type() string { return "on|off" }

// MarshalText returns the word String returns.
func (t Toggle) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses the word as ParseToggle does.
func (t *Toggle) UnmarshalText(b []byte) error { return t.Set(string(b)) }

// Options says how New builds a lab. The zero value makes a lab with a generated
// name, kernel defaults for MTU and offloads, one queue pair and no IPv6.
type Options struct {
	// Name is the lab's name stem: the namespaces are Name+"A" and Name+"B",
	// the veth ends Name+"A0" and Name+"B0". It is 1 to MaxNameLen characters
	// from [A-Za-z0-9_-], not starting with '-', and must not be in use.
	// Empty: New generates "skb<pid>_<n>" (n counts labs in this process, in
	// base 36), unique across processes and short enough for IFNAMSIZ.
	Name string `json:"name,omitempty"`

	// MTU is the MTU of both veth ends in bytes; 0 keeps the kernel default
	// (1500). veth accepts 68 to 65535; New refuses anything else with
	// ErrInvalid.
	MTU int `json:"mtu,omitempty"`

	// GRO, TSO and TxChecksum set generic receive offload, TCP segmentation
	// offload and transmit checksumming on both veth ends, as
	// `ethtool -K <if> gro|tso|tx on|off` does. Anything but Default needs
	// the ethtool program (Debian package ethtool) in PATH.
	GRO        Toggle `json:"gro,omitempty"`
	TSO        Toggle `json:"tso,omitempty"`
	TxChecksum Toggle `json:"txcsum,omitempty"`

	// Threaded turns on threaded NAPI for side B's veth
	// (/sys/class/net/<if>/threaded, Documentation/ABI/testing/sysfs-class-net):
	// B's receive work then runs in a kernel thread "napi/<if>-<id>" that the
	// scheduler may put on another core, rather than in softirq on the sender's.
	// veth has NAPI only while GRO is on or an XDP program is attached, so with
	// GRO Default New turns GRO on for B's end alone, and Threaded with GRO Off
	// is ErrInvalid.
	Threaded bool `json:"threaded,omitempty"`

	// Queues is the number of receive and transmit queues of each veth end
	// (numrxqueues and numtxqueues at creation, as `ip link add ... numrxqueues N`);
	// 0 means 1, at most MaxQueues.
	Queues int `json:"queues,omitempty"`

	// IPv6 keeps IPv6 on the veth ends and adds 2001:2::1/64 (A) and 2001:2::2/64
	// (B) from the benchmarking range of RFC 5180, without duplicate address
	// detection and with permanent neighbour entries. When false, IPv6 is
	// disabled on both veth ends (net.ipv6.conf.<if>.disable_ipv6=1), so the
	// link carries no router solicitations, MLD reports or neighbour discovery:
	// only what a test sends.
	IPv6 bool `json:"ipv6,omitempty"`

	// Persist records the lab as outliving the process that made it: Cleanup
	// leaves it alone, and only Remove (`skb lab down`) or Close removes it.
	// `skb lab up` sets it. Labs made without it are removed by Cleanup once
	// their process is gone.
	Persist bool `json:"persist,omitempty"`
}

// MaxNameLen is the longest name stem Options.Name may hold: the veth end
// Name+"A0" must fit IFNAMSIZ (16 bytes with the NUL, include/uapi/linux/if.h).
const MaxNameLen = 13

// The lab's addresses. Side A has the first address of each pair and MAC,
// side B the second. The IPv4 addresses are from 198.18.0.0/15 (RFC 2544
// benchmarking), the IPv6 ones from 2001:2::/48 (RFC 5180), the MACs are
// locally administered unicast (IEEE 802, bit 1 of the first octet) with
// c6:12 = 198.18 in the middle. Every lab uses the same ones: each is its
// own pair of namespaces, so they never meet.
var (
	AddrA   = netip.MustParseAddr("198.18.0.1")
	AddrB   = netip.MustParseAddr("198.18.0.2")
	Prefix  = netip.MustParsePrefix("198.18.0.0/24")
	Addr6A  = netip.MustParseAddr("2001:2::1")
	Addr6B  = netip.MustParseAddr("2001:2::2")
	Prefix6 = netip.MustParsePrefix("2001:2::/64")
	MACA    = net.HardwareAddr{0x02, 0x00, 0xc6, 0x12, 0x00, 0x01}
	MACB    = net.HardwareAddr{0x02, 0x00, 0xc6, 0x12, 0x00, 0x02}
)

// ValidName reports whether s is a valid lab name (see Options.Name): 1 to
// MaxNameLen characters from [A-Za-z0-9_-], not starting with '-'.
func ValidName(s string) bool { return validName(s) }

// validName reports whether s is a valid name stem (see Options.Name).
func validName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// veth's MTU range (ETH_MIN_MTU; ETH_MAX_MTU, veth's max_mtu).
const (
	vethMinMTU = 68
	vethMaxMTU = 65535
)

// MaxQueues is the most receive or transmit queues the kernel gives a
// device created over netlink: rtnl_create_link (net/core/rtnetlink.c)
// refuses more with EINVAL ("Invalid number of transmit queues").
const MaxQueues = 4096

// check returns an error wrapping ErrInvalid for options no lab can have,
// among them an MTU outside veth's range or queue counts over MaxQueues,
// which the kernel would refuse only once the namespaces exist, and IPv6's
// minimum MTU, which it reports only when the addresses are added, as a
// bare EINVAL.
func (o *Options) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("lab: new: %w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Name != "" && !validName(o.Name):
		return bad("name %q: want 1 to %d characters from [A-Za-z0-9_-], not starting with '-'", o.Name, MaxNameLen)
	case o.MTU < 0:
		return bad("mtu %d is negative", o.MTU)
	case o.MTU > 0 && (o.MTU < vethMinMTU || o.MTU > vethMaxMTU):
		return bad("mtu %d: veth takes %d to %d", o.MTU, vethMinMTU, vethMaxMTU)
	case o.IPv6 && o.MTU > 0 && o.MTU < ipv6MinMTU:
		return bad("mtu %d with IPv6: IPv6 needs at least %d (RFC 8200 section 5)", o.MTU, ipv6MinMTU)
	case o.Queues < 0 || o.Queues > MaxQueues:
		return bad("queues %d: want 1 to %d (0 means 1)", o.Queues, MaxQueues)
	case o.GRO > Off || o.TSO > Off || o.TxChecksum > Off:
		return bad("toggle out of range (gro %v, tso %v, txcsum %v)", o.GRO, o.TSO, o.TxChecksum)
	case o.Threaded && o.GRO == Off:
		return bad("threaded NAPI needs GRO on the veth (veth runs NAPI only with GRO or XDP), but GRO is off")
	}
	return nil
}

// Features is what `ethtool -k` reports for the offloads a lab sets: the
// active state, not the requested one.
type Features struct {
	GRO        bool `json:"gro"`    // generic-receive-offload
	TSO        bool `json:"tso"`    // tx-tcp-segmentation (TSO for IPv4)
	TxChecksum bool `json:"txcsum"` // tx-checksumming
}

// parseEthtoolFeatures reads the output of `ethtool -k IF`: lines
// "name: on|off [fixed|requested on|...]", sub-features indented with a tab.
// It needs all three names present.
func parseEthtoolFeatures(out string) (Features, error) {
	var f Features
	var seen int
	for _, line := range strings.Split(out, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		on := val == "on" || strings.HasPrefix(val, "on ")
		switch name {
		case "generic-receive-offload":
			f.GRO, seen = on, seen|1
		case "tx-tcp-segmentation":
			f.TSO, seen = on, seen|2
		case "tx-checksumming":
			f.TxChecksum, seen = on, seen|4
		}
	}
	if seen != 7 {
		return f, fmt.Errorf("ethtool -k output lacks generic-receive-offload, tx-tcp-segmentation or tx-checksumming")
	}
	return f, nil
}

// ipv6MinMTU is the smallest MTU a link carrying IPv6 may have, in bytes
// (RFC 8200 section 5).
const ipv6MinMTU = 1280
