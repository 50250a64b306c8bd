package main

import (
	"errors"
	"fmt"
	"net/netip"

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
}

func lookupLink(name string) (*linkInfo, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("no interface %q in this network namespace (see `ip link`)", name)
		}
		return nil, fmt.Errorf("interface %q: %w", name, err)
	}
	a := l.Attrs()
	if len(a.HardwareAddr) != 6 {
		return nil, fmt.Errorf("interface %q has no Ethernet address: link-layer devices need Ethernet", name)
	}
	return &linkInfo{name: name, index: a.Index, mac: header.MAC(a.HardwareAddr), link: l}, nil
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
