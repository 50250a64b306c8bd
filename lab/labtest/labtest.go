// Package labtest gives tests a lab (package lab) that is removed when the test
// ends, and skips tests that cannot have one.
//
// The rule for every privileged test in the project: when the process lacks a
// privilege or tool the test needs, the test is skipped with a reason that
// names it (root, CAP_NET_ADMIN, CAP_SYS_ADMIN, a program and its Debian
// package), except when the environment variable CI is "true": there the test
// fails instead, so that a CI run can never pass by skipping.
//
// It is not a fixture framework: it makes one lab per call, and tests that
// share a lab pass it around themselves.
package labtest

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/skbdev/skb/lab"
)

// InCI reports whether the environment variable CI is "true", as CI systems
// set it; privileged tests then fail instead of skipping.
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips tb with reason, or fails it when InCI: for a test that
// needs something of the machine (a kernel feature, a program) that CI's
// machine is known to have.
func SkipOrFail(tb testing.TB, reason string) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("%s (CI=true: failing instead of skipping)", reason)
	}
	tb.Skip(reason)
}

// RequireRoot skips tb (fails it when CI=true) unless the process may make a
// lab: root, or CAP_SYS_ADMIN and CAP_NET_ADMIN (lab.Privileged). The reason
// names what is missing. Off Linux it always skips.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	err := lab.Privileged()
	switch {
	case err == nil:
	case errors.Is(err, errors.ErrUnsupported):
		tb.Skip(err.Error())
	default:
		SkipOrFail(tb, err.Error())
	}
}

// RequireTool skips tb (fails it when CI=true) unless the program prog is in
// PATH; pkg is the Debian package that installs it, named in the reason.
func RequireTool(tb testing.TB, prog, pkg string) {
	tb.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		SkipOrFail(tb, "needs "+prog+" in PATH (Debian package "+pkg+"): "+err.Error())
	}
}

// ScapyPython returns a python3 that imports scapy, the packet crafter
// (Debian's /usr/bin/python3, where the python3-scapy package puts it,
// before any other python3 in PATH), or skips tb (fails it when CI=true).
func ScapyPython(tb testing.TB) string {
	tb.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import scapy.all").Run() == nil {
			return py
		}
	}
	SkipOrFail(tb, "needs python3 with the scapy module (Debian package python3-scapy)")
	return ""
}

var cleanupOnce sync.Once

// New makes a lab with opts for tb and registers its Close with tb.Cleanup,
// reporting a failure to remove it as a test error. It calls RequireRoot
// first, and RequireTool for ethtool when opts sets an offload. The first call
// in a process also removes stale labs left by killed test processes
// (lab.Cleanup). A failure to make the lab fails the test.
func New(tb testing.TB, opts lab.Options) *lab.Lab {
	tb.Helper()
	RequireRoot(tb)
	if opts.GRO != lab.Default || opts.TSO != lab.Default || opts.TxChecksum != lab.Default || opts.Threaded {
		RequireTool(tb, "ethtool", "ethtool")
	}
	cleanupOnce.Do(func() {
		if names, err := lab.Cleanup(); err != nil {
			tb.Logf("labtest: removing stale labs %v: %v", names, err)
		}
	})
	l, err := lab.New(opts)
	if err != nil {
		tb.Fatalf("labtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := l.Close(); err != nil {
			tb.Errorf("labtest: close lab %s: %v", l.Name, err)
		}
	})
	return l
}
