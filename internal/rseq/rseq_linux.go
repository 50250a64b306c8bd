package rseq

import (
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
// glibc.pthread.rseq already, it executes /proc/self/exe again with the
// same arguments, Tunable added to GLIBC_TUNABLES and the original kept in
// Saved; it does not return then. In the new image (Saved set) it puts
// GLIBC_TUNABLES back as the caller had it and returns. It returns, doing
// nothing, in a static binary, under a glibc that registers nothing, and
// when the exec fails (its error is returned, and the program runs on with
// the registration). Call it first in main, before the program starts
// other processes or threads of its own.
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
	orig, set := os.LookupEnv("GLIBC_TUNABLES")
	if set && strings.Contains(orig, tunableName+"=") {
		return nil
	}
	if reg, err := Registered(); err != nil || !reg {
		return err
	}
	env := os.Environ()
	saved, tun := "-", Tunable
	if set {
		saved = "+" + orig
		if orig != "" {
			tun = orig + ":" + Tunable
		}
	}
	env = setEnv(env, "GLIBC_TUNABLES", tun)
	env = setEnv(env, Saved, saved)
	return syscall.Exec("/proc/self/exe", os.Args, env)
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
