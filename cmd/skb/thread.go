package main

import "github.com/skbdev/skb/netdev"

// onThread runs a command's datapath loop fn on an OS thread of its own
// with a private descriptor table (netdev.RunOnThread): each system call on
// the device's sockets then skips the reference the kernel takes on the
// file when a table is shared between threads. The device must be opened
// before and closed after. Where the kernel refuses the private table, fn
// runs with the shared one.
func onThread(fn func()) {
	if _, err := netdev.RunOnThread(-1, fn); err != nil {
		fn() // only pinning fails, and no CPU is asked for
	}
}
