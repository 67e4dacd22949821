#include "textflag.h"

// func prefetchForWriting(p *byte, n int)
TEXT ·prefetchForWriting(SB),NOSPLIT,$0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
loop:
	// PREFETCHW (AX), which the Go assembler has no name for.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	ADDQ $64, AX
	SUBQ $64, CX
	JGT  loop
	RET

// func cpuHasPrefetchW() bool
TEXT ·cpuHasPrefetchW(SB),NOSPLIT,$0-1
	MOVB $0, ret+0(FP)
	MOVL $0x80000000, AX
	CPUID
	CMPL AX, $0x80000001
	JB   done
	MOVL $0x80000001, AX
	MOVL $0, CX
	CPUID
	// ECX bit 8: PREFETCHW (3DNowPrefetch).
	SHRL $8, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
done:
	RET
