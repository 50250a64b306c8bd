// Package lab makes a two-host testbed on one Linux machine: two network
// namespaces joined by a veth pair, so that drivers (AF_PACKET, AF_XDP, UDP,
// ...) can be tested and measured between two "hosts" with the kernel's real
// receive and transmit paths in between.
//
//	  namespace <name>A                             namespace <name>B
//	+------------------------+                  +------------------------+
//	| lo          127.0.0.1  |                  | lo          127.0.0.1  |
//	|                        |    veth pair     |                        |
//	| <name>A0 198.18.0.1/24 +------------------+ <name>B0 198.18.0.2/24 |
//	|  02:00:c6:12:00:01     |                  |  02:00:c6:12:00:02     |
//	|  neigh 198.18.0.2      |                  |  neigh 198.18.0.1      |
//	|   -> ..:02 permanent   |                  |   -> ..:01 permanent   |
//	+------------------------+                  +------------------------+
//	   Lab.A (Host)                                 Lab.B (Host): threaded
//	                                                NAPI here (Options.Threaded)
//
// The addresses come from 198.18.0.0/15, set aside for benchmarking by
// RFC 2544. Neither namespace has a route out of the lab. The root namespace
// has no interface in 198.18.0.0/24, so a packet it sends there follows its
// default route off the machine: send from inside, with Host.Do or Host.Cmd.
// The permanent neighbour entries mean that no
// ARP crosses the link, and IPv6 is off on the veth ends unless
// Options.IPv6 asks for it, so the link carries only what a test sends.
//
// New builds a lab (Options: name, MTU, GRO/TSO/transmit checksum, threaded
// NAPI, queue count, IPv6); Close removes it. Host.Do runs Go code inside a
// namespace (a socket opened there stays there), and Host.Cmd runs a program
// there through `ip netns exec`. SetOffloads and SetThreaded change a live
// lab, Features and Threaded read the state back.
//
// Names are unique across processes: a generated name is "skb<pid>_<n>", and
// every lab is recorded in RecordDir with the pid and start time of the
// process that made it, before anything else is made. A lab whose process was
// killed before Close is stale; Cleanup (or `skb lab down --all`) removes it.
// A lab made with Options.Persist (as `skb lab up` does) outlives its process
// and is removed only by Remove or `skb lab down`. Package labtest gives tests
// a lab that is removed when the test ends.
//
// Needs: Linux, root (or CAP_SYS_ADMIN and CAP_NET_ADMIN), the veth driver,
// iproute2's ip for Host.Cmd, and the ethtool program (Debian package ethtool)
// for any offload setting, including Threaded, which turns GRO on.
//
// It is not a network emulator: there is no delay, loss, rate limit or
// routing between more than two hosts (tc netem and more namespaces are the
// tools for that). It is not for production traffic: it only exists while a
// test or a benchmark needs it. Off Linux, New returns an error wrapping
// errors.ErrUnsupported.
package lab
