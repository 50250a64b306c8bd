//go:build linux && amd64

#include "textflag.h"

#define EINTR 4
#define EAGAIN 11

// func spin6(trap, a1, a2, a3, a4, a5, a6, tries uintptr) (r1, calls uintptr, errno Errno)
//
// The system call trap, made again at once while it fails with EAGAIN or
// EINTR, at most tries times (tries >= 1): see RecvfromSpin in
// spin_linux.go. The arguments stay in the registers of the Linux x86-64
// system call convention (rdi, rsi, rdx, r10, r8, r9), which the kernel
// keeps across the call (it clobbers rcx and r11 only, and returns in
// rax); the number is reloaded into rax before each call.
TEXT ·spin6(SB),NOSPLIT,$0-88
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), R10
	MOVQ	a5+40(FP), R8
	MOVQ	a6+48(FP), R9
	MOVQ	tries+56(FP), R12
	MOVQ	$0, R13
again:
	MOVQ	trap+0(FP), AX
	SYSCALL
	INCQ	R13
	CMPQ	AX, $0xfffffffffffff000
	JLS	ok
	NEGQ	AX
	CMPQ	R13, R12
	JAE	fail
	CMPQ	AX, $EAGAIN
	JEQ	again
	CMPQ	AX, $EINTR
	JEQ	again
fail:
	MOVQ	$-1, r1+64(FP)
	MOVQ	R13, calls+72(FP)
	MOVQ	AX, errno+80(FP)
	RET
ok:
	MOVQ	AX, r1+64(FP)
	MOVQ	R13, calls+72(FP)
	MOVQ	$0, errno+80(FP)
	RET
