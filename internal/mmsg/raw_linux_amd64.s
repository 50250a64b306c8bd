//go:build linux && amd64

#include "textflag.h"

// func Raw6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, errno Errno)
//
// The system call made from the frame of its Go caller: see Raw6's doc
// comment in raw_linux.go. Arguments in the registers of the Linux x86-64
// system call convention (rdi, rsi, rdx, r10, r8, r9; number in rax); the
// kernel returns -4095..-1 for an error (MAX_ERRNO).
TEXT ·Raw6(SB),NOSPLIT,$0-80
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), R10
	MOVQ	a5+40(FP), R8
	MOVQ	a6+48(FP), R9
	MOVQ	trap+0(FP), AX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff000
	JLS	ok
	MOVQ	$-1, r1+56(FP)
	MOVQ	$0, r2+64(FP)
	NEGQ	AX
	MOVQ	AX, errno+72(FP)
	RET
ok:
	MOVQ	AX, r1+56(FP)
	MOVQ	DX, r2+64(FP)
	MOVQ	$0, errno+72(FP)
	RET
