package rseq

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/skbdev/skb/internal/thread"
)

// probeLen is the size of the struct rseq the probe registers: the
// original 32-byte layout (cpu_id_start, cpu_id, rseq_cs, flags), which
// every kernel with rseq(2) accepts, aligned to 32 bytes.
const probeLen = 32

// probeSig is the signature the probe registers with and unregisters
// with; the kernel only compares the two (x86's RSEQ_SIG).
const probeSig = 0x53053053

// rseqFlagUnregister is RSEQ_FLAG_UNREGISTER (linux/rseq.h).
const rseqFlagUnregister = 1

// probeMu serializes probes: they share one area, which each probe's
// thread has ended with before the next starts.
var probeMu sync.Mutex

// Registered reports whether a thread of the program has a struct rseq
// registered with the kernel, as glibc registers one for each thread it
// starts. It asks by registering a struct of its own (rseq(2)): the
// kernel refuses a second one (EINVAL for another address, EBUSY for the
// same), and when it accepts, nothing was registered, and the probe
// unregisters. It asks on a thread of its own, never the main thread,
// which ends before it returns (thread.Run), so that a registration the
// kernel would not undo dies with it. It reports false with no error
// where rseq(2) is not there or not allowed (ENOSYS, or EPERM from a
// seccomp filter, under which glibc registers nothing either), and an
// error wrapping the errno of any other answer. Safe for concurrent use.
func Registered() (bool, error) {
	probeMu.Lock()
	defer probeMu.Unlock()
	var reg bool
	var err error
	thread.Run(func() { reg, err = probe() })
	return reg, err
}

// probe registers the probe area on the calling thread and unregisters it,
// and reads the kernel's answer as Registered says.
func probe() (bool, error) {
	p := probeAddr()
	e := rseqCall(p, 0)
	switch e {
	case 0:
		if e = rseqCall(p, rseqFlagUnregister); e != 0 {
			return false, fmt.Errorf("rseq: unregister the probe: %w", e)
		}
		return false, nil
	case unix.ENOSYS, unix.EPERM:
		return false, nil
	case unix.EINVAL, unix.EBUSY:
		return true, nil
	}
	return false, fmt.Errorf("rseq: probe: %w", e)
}

// Reexec turns glibc's rseq registration off for the program: when a
// thread has one registered and GLIBC_TUNABLES does not set
// glibc.pthread.rseq already, it executes the program's own file again
// with the same arguments, Tunable added to GLIBC_TUNABLES and the
// original kept in Saved; it does not return then. In the new image
// (Saved set) it puts GLIBC_TUNABLES back as the caller had it and
// returns. It returns, doing nothing, in a static binary, under a glibc
// that registers nothing, in secure mode (AT_SECURE: a set-user-ID or
// file-capability program, whose tunables glibc ignores), when the
// environment holds GLIBC_TUNABLES more than once, when the program was
// started through the dynamic loader (ld.so PROGRAM) or its file was
// deleted or replaced since, and when the exec fails (its error is
// returned, wrapped, and the program runs on with the registration). The
// file is executed by the path it was started by when that still names
// it (a symlink too), else by the path /proc/self/exe resolves to, never
// as /proc/self/exe: the process keeps its name (comm). Starting again
// costs about 3 ms; a program that sets the tunable itself, either way,
// saves it. Call it first in main, before the program starts other
// processes or threads of its own; not safe for concurrent use.
func Reexec() error {
	if v, ok := os.LookupEnv(Saved); ok {
		os.Unsetenv(Saved)
		if orig, set, ours := marker(v); ours {
			if set {
				os.Setenv("GLIBC_TUNABLES", orig)
			} else {
				os.Unsetenv("GLIBC_TUNABLES")
			}
			return nil
		}
		// Not Reexec's: ignored.
	}
	orig, set := os.LookupEnv("GLIBC_TUNABLES")
	if set && setsTunable(orig) || tunablesTwice() || secure() {
		return nil
	}
	if reg, err := Registered(); err != nil || !reg {
		return err
	}
	path, ok := self()
	if !ok {
		return nil
	}
	saved := "-"
	if set {
		saved = "+" + orig
	}
	env := setEnv(os.Environ(), "GLIBC_TUNABLES", withTunable(orig))
	env = setEnv(env, Saved, saved)
	// The runtime raised the soft limit on open files at start; exec puts
	// it back for the new image, and a failed exec would leave it so.
	var nofile unix.Rlimit
	haveLimit := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile) == nil
	err := unix.Exec(path, os.Args, env)
	if haveLimit {
		unix.Setrlimit(unix.RLIMIT_NOFILE, &nofile)
	}
	return fmt.Errorf("rseq: exec %s: %w", path, err)
}

// withTunable returns the GLIBC_TUNABLES value Reexec sets for the
// caller's value orig: orig with Tunable after it, or Tunable alone.
func withTunable(orig string) string {
	if orig == "" {
		return Tunable
	}
	return orig + ":" + Tunable
}

// marker reads a Saved value v: the caller's GLIBC_TUNABLES (orig, and
// whether it was set), and whether v is Reexec's own: "-" or "+" and the
// value, with GLIBC_TUNABLES now what Reexec set for it. glibc may have
// cut that value at a colon in place (NULs for its separators), so a
// prefix of it that ends where a colon was counts too.
func marker(v string) (orig string, set, ours bool) {
	switch {
	case v == "-":
	case strings.HasPrefix(v, "+"):
		orig, set = v[1:], true
	default:
		return "", false, false
	}
	want := withTunable(orig)
	now, ok := os.LookupEnv("GLIBC_TUNABLES")
	ours = ok && now != "" && strings.HasPrefix(want, now) && (len(now) == len(want) || want[len(now)] == ':')
	return orig, set, ours
}

// setsTunable reports whether the GLIBC_TUNABLES value v (colon-separated
// name=value pairs) sets glibc.pthread.rseq.
func setsTunable(v string) bool {
	for _, kv := range strings.Split(v, ":") {
		if name, _, ok := strings.Cut(kv, "="); ok && name == tunableName {
			return true
		}
	}
	return false
}

// atSecure is the auxiliary vector's AT_SECURE entry (getauxval(3)).
const atSecure = 23

// secure reports whether the program runs in secure mode (AT_SECURE
// non-zero), where glibc ignores GLIBC_TUNABLES; true when the auxiliary
// vector cannot be read.
func secure() bool {
	auxv, err := unix.Auxv()
	if err != nil {
		return true
	}
	for _, kv := range auxv {
		if kv[0] == atSecure {
			return kv[1] != 0
		}
	}
	return false
}

// self returns the path to execute the program's own file by, and whether
// it may be: the path it was started by (os.Args[0], looked up in PATH when
// it has no slash) when that names the file the process runs, else the
// path /proc/self/exe resolves to when that still does (not deleted, not
// replaced); and the file must be a program with a dynamic loader (an ELF
// PT_INTERP header). Run as `ld.so PROGRAM`, the process's file is the
// loader, which has none.
func self() (string, bool) {
	running, err := os.Stat("/proc/self/exe")
	if err != nil {
		return "", false
	}
	same := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && os.SameFile(fi, running)
	}
	path := ""
	if len(os.Args) > 0 {
		if p, err := exec.LookPath(os.Args[0]); err == nil && same(p) {
			path = p
		}
	}
	if path == "" {
		p, err := os.Executable()
		if err != nil || !same(p) {
			return "", false
		}
		path = p
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return path, true
		}
	}
	return "", false
}

// tunablesTwice reports whether the environment the program was started
// with (/proc/self/environ) holds GLIBC_TUNABLES more than once: Go keeps
// only the first (os.Environ), and which one glibc read is its own
// affair. It reports true when that cannot be read.
func tunablesTwice() bool {
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return true
	}
	return countEnv(strings.Split(string(b), "\x00"), "GLIBC_TUNABLES") > 1
}

// countEnv returns how many entries of env set key.
func countEnv(env []string, key string) int {
	n := 0
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			n++
		}
	}
	return n
}

// setEnv returns env with key set to v, replacing every earlier setting.
func setEnv(env []string, key, v string) []string {
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+v)
}
