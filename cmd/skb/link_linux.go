package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/header"
)

// linkInfo is what the kernel says of an interface, in the network
// namespace of the process (so `ip netns exec NS skb ...` sees NS's).
type linkInfo struct {
	name  string
	index int
	mac   header.MAC
	link  netlink.Link
	// rxQueues and txQueues are the interface's queues in use (see
	// queueCounts); 0 when unknown.
	rxQueues, txQueues int
}

func lookupLink(name string) (*linkInfo, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("no interface %q in this network namespace (see `ip link`; a lab's interfaces are in its namespaces: run inside one with `skb lab exec a|b`)", name)
		}
		return nil, fmt.Errorf("interface %q: %w", name, err)
	}
	a := l.Attrs()
	if len(a.HardwareAddr) != 6 {
		return nil, fmt.Errorf("interface %q has no Ethernet address: link-layer devices need Ethernet", name)
	}
	li := &linkInfo{name: name, index: a.Index, mac: header.MAC(a.HardwareAddr), link: l}
	li.rxQueues, li.txQueues = li.queueCounts(a.NumRxQueues, a.NumTxQueues)
	return li, nil
}

// isVeth reports whether the interface is a veth.
func (l *linkInfo) isVeth() bool { return l.link.Type() == "veth" }

// queueCounts returns the receive and transmit queues the interface has
// in use: the kernel's real_num_rx_queues and real_num_tx_queues, which
// ethtool -L changes and an AF_XDP bind checks, counted as the rx-N and
// tx-N entries of /sys/class/net/<name>/queues. Those can be fewer than the
// queues allocated, rx and tx, which netlink gives (IFLA_NUM_RX_QUEUES: a
// veth allocates one per CPU and uses one). A sysfs shows the network
// namespace it was mounted in, not the reader's (ip netns exec mounts the
// namespace's own): when the interface there is not this one (another
// ifindex or address), queueCounts returns rx and tx.
func (l *linkInfo) queueCounts(rx, tx int) (int, int) {
	dir := "/sys/class/net/" + l.name
	idx, err1 := os.ReadFile(dir + "/ifindex")
	addr, err2 := os.ReadFile(dir + "/address")
	ents, err3 := os.ReadDir(dir + "/queues")
	if err1 != nil || err2 != nil || err3 != nil ||
		strings.TrimSpace(string(idx)) != strconv.Itoa(l.index) || strings.TrimSpace(string(addr)) != l.mac.String() {
		return rx, tx
	}
	var r, t int
	for _, e := range ents {
		switch {
		case strings.HasPrefix(e.Name(), "rx-"):
			r++
		case strings.HasPrefix(e.Name(), "tx-"):
			t++
		}
	}
	if r == 0 || t == 0 {
		return rx, tx
	}
	return r, t
}

// source returns the interface's first address of dst's family.
func (l *linkInfo) source(dst netip.Addr) (netip.Addr, error) {
	fam, name := unix.AF_INET, "IPv4"
	if dst.Is6() {
		fam, name = unix.AF_INET6, "IPv6"
	}
	addrs, err := netlink.AddrList(l.link, fam)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", l.name, err)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if ok && !ip.Unmap().IsLinkLocalUnicast() {
			return ip.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s has no %s address: give --src", l.name, name)
}

// hasAddr reports whether a is one of the interface's addresses, of
// either family (`ip addr show dev NAME`).
func (l *linkInfo) hasAddr(a netip.Addr) (bool, error) {
	addrs, err := netlink.AddrList(l.link, netlink.FAMILY_ALL)
	if err != nil {
		return false, fmt.Errorf("addresses of %s: %w", l.name, err)
	}
	for _, x := range addrs {
		if ip, ok := netip.AddrFromSlice(x.IP); ok && ip.Unmap() == a.Unmap() {
			return true, nil
		}
	}
	return false, nil
}

// neighbour returns the MAC of the next hop towards dst on the interface,
// from the kernel's neighbour table (`ip neigh`): dst itself when it is on
// the link, its gateway otherwise (only with --allow-any-dst: checkDst
// refuses a gateway). A destination without a route is an error saying so.
func (l *linkInfo) neighbour(dst netip.Addr) (header.MAC, error) {
	hop := dst
	routes, err := netlink.RouteGet(dst.AsSlice())
	if err != nil || len(routes) == 0 {
		if err == nil {
			err = unix.ENETUNREACH
		}
		return header.MAC{}, fmt.Errorf("no route to %v in this network namespace (ip route get %v: %v)", dst, dst, err)
	}
	r := routes[0]
	if r.LinkIndex != 0 && r.LinkIndex != l.index {
		return header.MAC{}, fmt.Errorf("the route to %v leaves through another interface than %s (ip route get %v)", dst, l.name, dst)
	}
	if gw, ok := netip.AddrFromSlice(r.Gw); ok && gw.IsValid() && !gw.IsUnspecified() {
		hop = gw.Unmap()
	}
	fam := unix.AF_INET
	if hop.Is6() {
		fam = unix.AF_INET6
	}
	neighs, err := netlink.NeighList(l.index, fam)
	if err != nil {
		return header.MAC{}, fmt.Errorf("neighbours of %s: %w", l.name, err)
	}
	const unusable = netlink.NUD_INCOMPLETE | netlink.NUD_FAILED
	for _, n := range neighs {
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok || ip.Unmap() != hop || n.State&unusable != 0 || n.State == netlink.NUD_NONE || len(n.HardwareAddr) != 6 {
			continue
		}
		return header.MAC(n.HardwareAddr), nil
	}
	return header.MAC{}, fmt.Errorf("no neighbour entry for %v on %s: ping it once, or give --dst-mac (ip neigh show dev %s)", hop, l.name, l.name)
}

// pathMTU returns the MTU of the route from src (when it is a specified
// address) to dst, in bytes: what a UDP socket bound to src and connected
// to dst reads with IP_MTU (IPV6_MTU for IPv6; ip(7), ipv6(7)). Connecting
// a UDP socket sends nothing.
func pathMTU(src netip.Addr, dst netip.AddrPort) (int, error) {
	a := dst.Addr().Unmap()
	fam, level, opt := unix.AF_INET6, unix.IPPROTO_IPV6, unix.IPV6_MTU
	var sa unix.Sockaddr
	if a.Is4() {
		fam, level, opt = unix.AF_INET, unix.IPPROTO_IP, unix.IP_MTU
		sa = &unix.SockaddrInet4{Port: int(dst.Port()), Addr: a.As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(dst.Port()), Addr: a.As16()}
	}
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if src = src.Unmap(); src.IsValid() && !src.IsUnspecified() && src.Is4() == a.Is4() {
		var from unix.Sockaddr = &unix.SockaddrInet6{Addr: src.As16()}
		if src.Is4() {
			from = &unix.SockaddrInet4{Addr: src.As4()}
		}
		if err := unix.Bind(fd, from); err != nil {
			return 0, err
		}
	}
	if err := unix.Connect(fd, sa); err != nil {
		return 0, err
	}
	return unix.GetsockoptInt(fd, level, opt)
}
