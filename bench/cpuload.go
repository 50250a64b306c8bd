package bench

import (
	"os"
	"strconv"
	"strings"
)

// cpuSnap is a reading of the system's and this process's CPU times, in
// clock ticks (USER_HZ), from /proc/stat and /proc/self/stat (proc(5)).
type cpuSnap struct {
	total, idle, irq uint64 // all CPUs: every state; idle and iowait; irq and softirq
	self             uint64 // this process and its waited-for children: user and system
	ok               bool
}

// snapCPU reads the CPU times now.
func snapCPU() cpuSnap {
	var s cpuSnap
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already in user).
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s
		}
		s.total += n
		switch i {
		case 3, 4:
			s.idle += n
		case 5, 6:
			s.irq += n
		}
	}
	b, err = os.ReadFile("/proc/self/stat")
	if err != nil {
		return s
	}
	// The command name may hold spaces: the fields after it start after
	// the last ')'. utime, stime, cutime, cstime are fields 14 to 17.
	str := string(b)
	i := strings.LastIndexByte(str, ')')
	if i < 0 {
		return s
	}
	g := strings.Fields(str[i+1:])
	if len(g) < 15 {
		return s
	}
	for _, v := range g[11:15] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s
		}
		s.self += n
	}
	s.ok = true
	return s
}

// othersBusy returns the share of all CPU time between a and b that neither
// this process (with the programs it ran) nor interrupt work used, in
// percent: other programs on the machine, and time the hypervisor stole.
// Interrupt and softirq time is left out because on loopback and veth the
// kernel does the packets' receive work there on this process's behalf. It
// returns -1 when unknown.
func othersBusy(a, b cpuSnap) int {
	if !a.ok || !b.ok || b.total <= a.total {
		return -1
	}
	total := b.total - a.total
	busy := total - (b.idle - a.idle)
	mine := (b.self - a.self) + (b.irq - a.irq)
	if mine >= busy {
		return 0
	}
	return int((busy - mine) * 100 / total)
}
