//go:build !linux

package main

import (
	"fmt"
	"net/netip"

	"github.com/skbdev/skb/header"
)

// linkInfo is what the kernel says of an interface; link-layer devices
// exist on Linux only.
type linkInfo struct {
	mac                header.MAC
	rxQueues, txQueues int
}

func lookupLink(name string) (*linkInfo, error) {
	return nil, fmt.Errorf("interface %q: link-layer devices need Linux", name)
}

func (l *linkInfo) isVeth() bool { return false }

func (l *linkInfo) source(dst netip.Addr) (netip.Addr, error) {
	return netip.Addr{}, fmt.Errorf("link-layer devices need Linux")
}

func (l *linkInfo) hasAddr(a netip.Addr) (bool, error) {
	return false, fmt.Errorf("link-layer devices need Linux")
}

func (l *linkInfo) neighbour(dst netip.Addr) (header.MAC, error) {
	return header.MAC{}, fmt.Errorf("link-layer devices need Linux")
}

// pathMTU is not known off Linux.
func pathMTU(src netip.Addr, dst netip.AddrPort) (int, error) {
	return 0, fmt.Errorf("path MTU: needs Linux")
}
