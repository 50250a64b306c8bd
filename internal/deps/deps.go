//go:build tools

// Package deps pins the modules skb's packages import while they are being written.
package deps

import (
	_ "github.com/cilium/ebpf"
	_ "github.com/cilium/ebpf/asm"
	_ "github.com/google/gopacket/layers"
	_ "github.com/spf13/cobra"
	_ "github.com/vishvananda/netlink"
	_ "github.com/vishvananda/netns"
	_ "golang.org/x/net/ipv4"
	_ "golang.org/x/sys/unix"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg"
)
