// Package icmptest runs, for the tests that need the kernel to answer with
// ICMP (a port unreachable from a closed UDP port, an echo reply to ping),
// a check on each CPU in turn until one passes.
//
// The kernel sends ICMP from one socket per CPU (icmp_xmit_lock and
// icmp_push_reply in net/ipv4/icmp.c). When that socket cannot take a
// message the CPU sends none and counts it in Icmp OutErrors of
// /proc/net/snmp; test machines have had one CPU in that state for hours
// while the other answered. The message is built on the CPU that receives the
// packet it answers, which on loopback and veth is the sending thread's
// CPU. So a check pinned to each CPU in turn tells a broken CPU from
// broken code: the test fails only when no CPU passes.
package icmptest
