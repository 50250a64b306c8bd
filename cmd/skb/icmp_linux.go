package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// icmpUnreachable returns the ICMP destination-unreachable messages the
// kernel has received in the network namespace of the process: Icmp
// InDestUnreachs of /proc/net/snmp, or Icmp6InDestUnreachs of
// /proc/net/snmp6 when v6 (RFC 2011 and RFC 4293's counters, as `nstat`
// shows them). ok is false when the counter cannot be read.
func icmpUnreachable(v6 bool) (n uint64, ok bool) {
	if v6 {
		f, err := os.Open("/proc/net/snmp6")
		if err != nil {
			return 0, false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, val, _ := strings.Cut(sc.Text(), " ")
			if name == "Icmp6InDestUnreachs" {
				n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
				return n, err == nil
			}
		}
		return 0, false
	}
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, false
	}
	// Two lines per protocol: "Icmp: NAME ..." then "Icmp: VALUE ...".
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		rest, found := strings.CutPrefix(line, "Icmp: ")
		if !found {
			continue
		}
		if names == nil {
			names = strings.Fields(rest)
			continue
		}
		vals := strings.Fields(rest)
		for i, name := range names {
			if name == "InDestUnreachs" && i < len(vals) {
				n, err := strconv.ParseUint(vals[i], 10, 64)
				return n, err == nil
			}
		}
		return 0, false
	}
	return 0, false
}
