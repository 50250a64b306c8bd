package bench

import (
	"os"
	"strconv"
	"strings"
)

// cpuSnap is a reading of the system's CPU times and of every other
// program's, in clock ticks (USER_HZ), from /proc/stat and
// /proc/[pid]/stat (proc(5)).
type cpuSnap struct {
	total uint64         // all CPUs, every state
	steal uint64         // all CPUs: time the hypervisor gave to other guests
	procs map[int]uint64 // user and system time of each process that is not this one, its child or a kernel thread
	ok    bool
}

// pfKthread is the kernel's PF_KTHREAD, in the flags of /proc/[pid]/stat:
// kernel threads (softirq and threaded-NAPI ones among them) do the
// packets' work of whoever sends them, so they are not other programs.
const pfKthread = 0x00200000

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
		if i == 7 {
			s.steal = n
		}
	}
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return s
	}
	self := os.Getpid()
	s.procs = make(map[int]uint64, len(dir))
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if ppid, flags, t, ok := procTimes(pid); ok && ppid != self && flags&pfKthread == 0 {
			s.procs[pid] = t
		}
	}
	s.ok = true
	return s
}

// procTimes returns the parent, the flags and the user and system time
// (with those of its waited-for children) of process pid, from
// /proc/[pid]/stat; ok is false when it is gone or unreadable.
func procTimes(pid int) (ppid int, flags, t uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	// The command name may hold spaces: the fields after it start after
	// the last ')'. From there, ppid is the 2nd, flags the 7th, utime,
	// stime, cutime and cstime the 12th to 15th.
	str := string(b)
	i := strings.LastIndexByte(str, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	g := strings.Fields(str[i+1:])
	if len(g) < 15 {
		return 0, 0, 0, false
	}
	ppid, err = strconv.Atoi(g[1])
	if err != nil {
		return 0, 0, 0, false
	}
	if flags, err = strconv.ParseUint(g[6], 10, 64); err != nil {
		return 0, 0, 0, false
	}
	for _, v := range g[11:15] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		t += n
	}
	return ppid, flags, t, true
}

// othersBusy returns the share of all CPU time between a and b that other
// programs used, in percent: the CPU time of every process but this one,
// its children and kernel threads (a process started meanwhile counts
// whole; one that ended before b is not seen, unless its parent waited for
// it), and the time the hypervisor stole. The time of this process, its
// children and the kernel's work for their packets (softirq, kernel
// threads) is not in it. It returns -1 when unknown.
func othersBusy(a, b cpuSnap) int {
	if !a.ok || !b.ok || b.total <= a.total {
		return -1
	}
	total := b.total - a.total
	var others uint64
	if b.steal > a.steal {
		others = b.steal - a.steal
	}
	for pid, t := range b.procs {
		if t0, ok := a.procs[pid]; ok && t0 <= t {
			others += t - t0
		} else if !ok {
			others += t
		}
	}
	return int(min(others, total) * 100 / total)
}
