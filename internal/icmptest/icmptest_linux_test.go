package icmptest

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// recorder is a testing.TB that keeps what Errorf says.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestOnEachCPU(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	// Failing everywhere: called once per CPU, each time pinned to one
	// CPU, with a child process pinned the same way; every error is told.
	var seen []int
	r := &recorder{TB: t}
	OnEachCPU(r, func() error {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			t.Fatal(err)
		}
		cpu := -1
		for c := range 1024 {
			if set.IsSet(c) {
				cpu = c
				break
			}
		}
		if set.Count() != 1 || !before.IsSet(cpu) {
			t.Errorf("check ran on %d CPUs (first %d), want one of the process's", set.Count(), cpu)
		}
		seen = append(seen, cpu)
		out, err := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status").Output()
		if err == nil && !strings.HasSuffix(strings.TrimSpace(string(out)), fmt.Sprintf("\t%d", cpu)) {
			t.Errorf("child on CPU %d: %q", cpu, out)
		}
		return fmt.Errorf("no answer on %d", cpu)
	})
	if len(seen) != before.Count() {
		t.Errorf("check ran on CPUs %v, want each of %d", seen, before.Count())
	}
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "failed on every CPU") ||
		!strings.Contains(r.errs[0], fmt.Sprintf("CPU %d: no answer on %d", seen[0], seen[0])) {
		t.Errorf("reported %q", r.errs)
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil || after != before {
		t.Errorf("mask after: %v (%v), want the one before", after.Count(), err)
	}

	// Passing on the first CPU: called once, nothing reported.
	n := 0
	r = &recorder{TB: t}
	OnEachCPU(r, func() error { n++; return nil })
	if n != 1 || len(r.errs) != 0 {
		t.Errorf("passing check called %d times, reported %q", n, r.errs)
	}
	// Passing on the last CPU only.
	n = 0
	r = &recorder{TB: t}
	OnEachCPU(r, func() error {
		if n++; n < before.Count() {
			return errors.New("not yet")
		}
		return nil
	})
	if n != before.Count() || len(r.errs) != 0 {
		t.Errorf("check passing last called %d times, reported %q", n, r.errs)
	}
}

func TestOutErrors(t *testing.T) {
	if n := OutErrors(); n < 0 {
		t.Errorf("Icmp OutErrors unreadable: %d", n)
	}
}
