package main

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// routeGuard asks the kernel (netlink RTM_GETROUTE, as `ip route get` does,
// in the network namespace of the process) how a packet to dst would leave,
// and returns nil only when it stays on a directly connected link: the route
// has no gateway, is not the default route, and, when ifname is not empty
// (a link-layer device, which puts frames on that interface whatever the
// routes say), leaves through ifname. A route of this host's own addresses
// (loopback) has no gateway and passes. src, when valid and specified, is
// the source address the lookup uses (`ip route get DST from SRC`). It sends
// nothing.
func routeGuard(flag string, dst, src netip.Addr, ifname string) error {
	var opts netlink.RouteGetOptions
	if src.IsValid() && !src.IsUnspecified() {
		opts.SrcAddr = net.IP(src.AsSlice())
	}
	routes, err := netlink.RouteGetWithOptions(net.IP(dst.AsSlice()), &opts)
	if err != nil || len(routes) == 0 {
		if err == nil {
			err = unix.ENETUNREACH
		}
		return fmt.Errorf("--%s %v: no route to it in this network namespace (ip route get %v: %v)", flag, dst, dst, err)
	}
	r := routes[0]
	dev := ifnameOf(r.LinkIndex)
	if r.Type == unix.RTN_BROADCAST {
		// A subnet's broadcast address (127.255.255.255 on lo): every
		// host of the link would take the packets.
		return fmt.Errorf("--%s %v: a broadcast address on %s: want a unicast address", flag, dst, dev)
	}
	if gw, ok := gateway(r); ok {
		return fmt.Errorf("--%s %v: the route goes via gateway %v on %s: %s", flag, dst, gw, dev, guardRule)
	}
	if ifname != "" {
		l, err := netlink.LinkByName(ifname)
		if err != nil {
			return fmt.Errorf("interface %q: %w", ifname, err)
		}
		if r.LinkIndex != l.Attrs().Index {
			// Not the guard's rule, so --allow-any-dst is no way out: a
			// frame sent on ifname cannot reach an address routed
			// elsewhere.
			return fmt.Errorf("--%s %v: the route leaves through %s, not %s: the device sends on %s only; give an address on its link (a lab's peer)", flag, dst, dev, ifname, ifname)
		}
	}
	// The route entry that matched (`ip route get fibmatch`): a default
	// route without a gateway (a point-to-point link, a tunnel) reaches
	// every address, not only a lab's.
	opts.FIBMatch = true
	fib, err := netlink.RouteGetWithOptions(net.IP(dst.AsSlice()), &opts)
	if err != nil || len(fib) == 0 {
		return fmt.Errorf("--%s %v: cannot read the route entry that matches it (ip route get fibmatch %v: %v): %s", flag, dst, dst, err, guardRule)
	}
	f := fib[0]
	if gw, ok := gateway(f); ok {
		return fmt.Errorf("--%s %v: the route goes via gateway %v on %s: %s", flag, dst, gw, dev, guardRule)
	}
	if f.Dst == nil || isDefault(f.Dst) {
		return fmt.Errorf("--%s %v: the route is the default route on %s: %s", flag, dst, dev, guardRule)
	}
	return nil
}

// gateway returns the first gateway r goes through: its own, an RTA_VIA
// address, or one of its multipath next hops'.
func gateway(r netlink.Route) (string, bool) {
	if gw, ok := netip.AddrFromSlice(r.Gw); ok && !gw.IsUnspecified() {
		return gw.Unmap().String(), true
	}
	if r.Via != nil {
		return r.Via.String(), true
	}
	for _, nh := range r.MultiPath {
		if gw, ok := netip.AddrFromSlice(nh.Gw); ok && !gw.IsUnspecified() {
			return gw.Unmap().String(), true
		}
		if nh.Via != nil {
			return nh.Via.String(), true
		}
	}
	return "", false
}

// isDefault reports whether n is 0.0.0.0/0 or ::/0.
func isDefault(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0
}

// ifnameOf returns the name of interface index i, or "ifindex I".
func ifnameOf(i int) string {
	if l, err := netlink.LinkByIndex(i); err == nil {
		return l.Attrs().Name
	}
	return "ifindex " + strconv.Itoa(i)
}
