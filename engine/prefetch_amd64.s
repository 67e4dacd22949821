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
