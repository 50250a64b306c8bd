package rseq

import (
	"debug/elf"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeLen is the size of the struct rseq the probe registers: the
// original 32-byte layout (cpu_id_start, cpu_id, rseq_cs, flags), which
// every kernel with rseq(2) accepts, aligned to 32 bytes.
const probeLen = 32

// probeSig is the signature the probe registers with and unregisters
// with; the kernel only compares the two (x86's RSEQ_SIG).
const probeSig = 0x53053053

// probeArea holds the probe's struct rseq: a global, so that it stays
// valid for the instant it is registered; 32-byte aligned within it.
var probeArea [2 * probeLen]byte

// rseqFlagUnregister is RSEQ_FLAG_UNREGISTER (linux/rseq.h).
const rseqFlagUnregister = 1

// Registered reports whether the calling thread has a struct rseq
// registered with the kernel, as glibc registers one for each thread it
// starts. It asks by registering one of its own (rseq(2)): the kernel
// refuses a second (EINVAL for another address, EBUSY for the same one);
// when it accepts, nothing was, and the probe unregisters at once. It
// reports false with no error where the kernel has no rseq(2) (ENOSYS),
// and the errno of an unexpected answer.
func Registered() (bool, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := unsafe.Pointer(&probeArea[0])
	if off := uintptr(p) % probeLen; off != 0 {
		p = unsafe.Add(p, probeLen-off)
	}
	_, _, e := unix.RawSyscall6(unix.SYS_RSEQ, uintptr(p), probeLen, 0, probeSig, 0, 0)
	switch e {
	case 0:
		_, _, e = unix.RawSyscall6(unix.SYS_RSEQ, uintptr(p), probeLen, rseqFlagUnregister, probeSig, 0, 0)
		if e != 0 {
			return false, e
		}
		return false, nil
	case unix.ENOSYS:
		return false, nil
	case unix.EINVAL, unix.EBUSY, unix.EPERM:
		return true, nil
	}
	return false, e
}

// Reexec turns glibc's rseq registration off for the program: when the
// calling thread has one registered and GLIBC_TUNABLES does not set
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
// returned, and the program runs on with the registration). The file is
// executed by its path, not as /proc/self/exe, so that the process keeps
// its name (comm). Call it first in main, before the program starts other
// processes or threads of its own.
func Reexec() error {
	if v, ok := os.LookupEnv(Saved); ok {
		os.Unsetenv(Saved)
		if rest, set := strings.CutPrefix(v, "+"); set {
			os.Setenv("GLIBC_TUNABLES", rest)
		} else {
			os.Unsetenv("GLIBC_TUNABLES")
		}
		return nil
	}
	env := os.Environ()
	orig, set := os.LookupEnv("GLIBC_TUNABLES")
	if set && strings.Contains(orig, tunableName+"=") || tunablesTwice() || secure() {
		return nil
	}
	if reg, err := Registered(); err != nil || !reg {
		return err
	}
	path, ok := self()
	if !ok {
		return nil
	}
	saved, tun := "-", Tunable
	if set {
		saved = "+" + orig
		if orig != "" {
			tun = orig + ":" + Tunable
		}
	}
	env = setEnv(env, "GLIBC_TUNABLES", tun)
	env = setEnv(env, Saved, saved)
	return syscall.Exec(path, os.Args, env)
}

// atSecure is the auxiliary vector's AT_SECURE entry (getauxval(3)).
const atSecure = 23

// secure reports whether the program runs in secure mode (AT_SECURE
// non-zero), where glibc ignores GLIBC_TUNABLES.
func secure() bool {
	auxv, err := unix.Auxv()
	if err != nil {
		return true // unknown: do not start again for nothing
	}
	for _, kv := range auxv {
		if kv[0] == atSecure {
			return kv[1] != 0
		}
	}
	return false
}

// self returns the path of the program's own file, as /proc/self/exe
// names it, and whether it may be executed again: it must still be the
// file the process runs (not deleted, not replaced) and a program with a
// dynamic loader (an ELF PT_INTERP header). Run as `ld.so PROGRAM`, the
// process's file is the loader, which has none.
func self() (string, bool) {
	path, err := os.Executable()
	if err != nil {
		return "", false
	}
	a, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	b, err := os.Stat("/proc/self/exe")
	if err != nil || !os.SameFile(a, b) {
		return "", false
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
