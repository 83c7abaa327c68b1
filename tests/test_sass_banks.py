#!/usr/bin/env python3
# tools/sass_banks on a hand-written listing: which FFMAs read two or three registers of one bank, reuse honoured.
import importlib.machinery
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
loader = importlib.machinery.SourceFileLoader("sass_banks", os.path.join(ROOT, "tools", "sass_banks"))
spec = importlib.util.spec_from_loader("sass_banks", loader)
sb = importlib.util.module_from_spec(spec)
loader.exec_module(sb)

LISTING = """
        Function : kern_a
        /*0000*/                   FFMA R1, R2, R4, R6 ;                 /* 0x0 */
        /*0010*/                   FFMA R3, R5, R4.reuse, R7 ;           /* 0x0 */
        /*0020*/                   FFMA R8, R9, R4, R10 ;                /* 0x0 */
        /*0030*/                   FFMA R11, R13.reuse, R12, R15 ;       /* 0x0 */
        /*0040*/                   LDS.128 R16, [R20] ;                  /* 0x0 */
        /*0050*/                   FFMA R21, R13, R12, R17 ;             /* 0x0 */
        /*0060*/                   @!P0 FFMA R22, -R24, R25, RZ ;        /* 0x0 */
        Function : kern_b
        /*0000*/                   FMUL R1, R2, R3 ;                     /* 0x0 */
"""


def main():
    fns = sb.functions(LISTING)
    ok = list(fns) == ["kern_a", "kern_b"] and len(fns["kern_a"]) == 7 and fns["kern_b"] == ["FMUL R1, R2, R3"]
    # Mod 2: 1 all even (two, three); 2 (R4 not cached yet), 4 and 5 (nothing cached after the LDS) two; 3, 6 none.
    got = sb.bank_stats(fns["kern_a"], 2)
    ok &= got == (6, 4, 1)
    got4 = sb.bank_stats(fns["kern_a"], 4)  # mod 4: only 1 (R2, R6) and 5 (R13, R17) read two of one bank
    ok &= got4 == (6, 2, 0)
    ok &= sb.bank_stats(fns["kern_b"], 2) == (0, 0, 0)
    print(f"functions {list(fns)}, banks 2 {got}, banks 4 {got4}")
    print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
