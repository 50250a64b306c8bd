//go:build linux

package icmptest

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// OnEachCPU calls check with the calling goroutine locked to its thread
// and that thread pinned to one CPU of the process's affinity mask, each
// CPU in turn, until check returns nil. Child processes that check starts
// inherit the pin (sched_setaffinity(2) is per thread, and a fork takes the
// forking thread's mask). The thread's mask is restored before
// OnEachCPU returns. When check fails on every CPU, OnEachCPU reports
// each CPU's error and the rise of Icmp OutErrors with t.Errorf. check may
// call t.Fatal: the mask is restored on the way out all the same.
func OnEachCPU(t testing.TB, check func() error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatalf("sched_getaffinity: %v", err)
	}
	defer unix.SchedSetaffinity(0, &all)
	before := OutErrors()
	var fails []string
	for cpu, left := 0, all.Count(); left > 0 && cpu < 1024; cpu++ {
		if !all.IsSet(cpu) {
			continue
		}
		left--
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			t.Fatalf("sched_setaffinity to CPU %d: %v", cpu, err)
		}
		err := check()
		if err == nil {
			if len(fails) > 0 {
				t.Logf("passed on CPU %d after failing on %s (Icmp OutErrors rose by %d)",
					cpu, strings.Join(fails, "; "), OutErrors()-before)
			}
			return
		}
		fails = append(fails, fmt.Sprintf("CPU %d: %v", cpu, err))
	}
	t.Errorf("failed on every CPU (Icmp OutErrors rose by %d):\n%s",
		OutErrors()-before, strings.Join(fails, "\n"))
}

// OutErrors returns the Icmp OutErrors counter of /proc/net/snmp (ICMP
// messages the kernel could not send, RFC 2011 icmpOutErrors) of the
// calling thread's namespace, or -1 where it cannot be read.
func OutErrors() int64 {
	f, err := os.Open("/proc/net/snmp")
	if err != nil {
		return -1
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "Icmp:" {
			continue
		}
		if names == nil {
			names = fields
			continue
		}
		for i, n := range names {
			if n == "OutErrors" && i < len(fields) {
				v, err := strconv.ParseInt(fields[i], 10, 64)
				if err != nil {
					return -1
				}
				return v
			}
		}
		return -1
	}
	return -1
}
