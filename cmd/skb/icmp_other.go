//go:build !linux

package main

// icmpUnreachable reports that the kernel's ICMP counters cannot be read
// here: they are read from Linux's /proc/net/snmp.
func icmpUnreachable(v6 bool) (n uint64, ok bool) { return 0, false }
