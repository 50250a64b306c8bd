//go:build linux

package mmsg

import "golang.org/x/sys/unix"

// Raw6 makes system call trap with six arguments without telling the Go
// scheduler, as syscall.RawSyscall6 does, and returns the call's result
// (r1, r2) and errno 0, or -1 (all bits set) and the errno. It is for
// calls that cannot sleep (MSG_DONTWAIT, a ring's doorbell), which a
// busy-polling loop makes millions of times a second. It is implemented
// in assembly, so pointer arguments follow the rule for system calls: an
// unsafe.Pointer converted to uintptr in the call's argument list keeps
// its memory alive and in place until the call returns.
//
// On amd64 it is one assembly function making the call, where
// syscall.RawSyscall6 is a Go function around the runtime's assembly one,
// and x/sys/unix's RawSyscall6 a jump to that: one stack frame fewer
// between the caller and the system call. On this kind of machine (AMD,
// with the kernel's return-stack mitigations) every return taken after a
// system call mispredicts, so each frame costs several ns on the way out.
// BenchmarkRawRecvfromEmpty, an empty non-blocking recvfrom, 8 interleaved
// runs: 354 ns through Raw6 against 369 ns through the syscall package
// (medians), Raw6 faster in 6 of the 8 pairs. On other architectures it
// jumps to syscall.RawSyscall6.
//
//go:noescape
func Raw6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, errno unix.Errno)
