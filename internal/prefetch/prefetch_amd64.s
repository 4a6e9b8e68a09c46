#include "textflag.h"

// func addr(p uintptr)
TEXT ·addr(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	p+0(FP), AX
	PREFETCHT0	(AX)
	RET
