//go:build !linux

package main

import (
	"fmt"
	"net/netip"
)

// routeGuard refuses every destination: reading the kernel's routes needs
// Linux (netlink).
func routeGuard(flag string, dst, src netip.Addr, ifname string) error {
	return fmt.Errorf("--%s %v: cannot read the route to it on this platform: pass --allow-any-dst to send there anyway", flag, dst)
}
