//go:build linux && (386 || arm || mips || mipsle)

#include "textflag.h"

// func Raw6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, errno Errno)
//
// syscall.RawSyscall6 itself, reached by a jump, so that Raw6 is an
// assembly function (see raw_linux.go).
TEXT ·Raw6(SB),NOSPLIT,$0-40
	JMP	syscall·RawSyscall6(SB)
