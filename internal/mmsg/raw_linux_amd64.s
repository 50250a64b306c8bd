//go:build linux && amd64

#include "textflag.h"

// func Raw6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r uintptr, errno Errno)
//
// The system call made from the frame of its Go caller: see Raw6's doc
// comment in raw_linux_amd64.go. Arguments in the registers of the Linux
// x86-64 system call convention (rdi, rsi, rdx, r10, r8, r9; number in rax);
// the kernel returns -4095..-1 for an error.
TEXT ·Raw6(SB),NOSPLIT,$0-72
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), R10
	MOVQ	a5+40(FP), R8
	MOVQ	a6+48(FP), R9
	MOVQ	trap+0(FP), AX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, r+56(FP)
	NEGQ	AX
	MOVQ	AX, errno+64(FP)
	RET
ok:
	MOVQ	AX, r+56(FP)
	MOVQ	$0, errno+64(FP)
	RET
