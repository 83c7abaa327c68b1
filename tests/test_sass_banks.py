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

ENC = "                                                         /* 0x000fe20000000800 */"
BODY_A = [
    "FFMA R1, R2, R4, R6",          # 1: R2 R4 R6 all even (mod 2: two and three; mod 4: R2 R6)
    "FFMA R3, R5, R4.reuse, R7",    # 2: R4 not cached yet; R5 R7 odd (mod 2: two)
    "FFMA R8, R9, R4, R10",         # 3: R4 cached; R9 odd, R10 even (none)
    "FFMA R11, R13.reuse, R12, R15",  # 4: R13 R15 odd (mod 2: two)
    "LDS.128 R16, [R20]",
    "FFMA R21, R13, R12, R17",      # 5: the LDS ended R13's reuse: R13 R17 odd (mod 2: two; mod 4: R13 R17)
    "@!P0 FFMA R22, -R24, R25, RZ",  # 6: R24 even, R25 odd (none)
    "FFMA R26, R28.reuse, R30, R32",  # 7: all even (two, three; mod 4: R28 R32)
    "FFMA R27, R29, R28, R31",      # 8: R28 reused in slot a, read in slot b: read; R29 R31 odd (mod 2: two)
    "FFMA R33, R34, 0.5, R35",      # not three registers: not counted, ends the chain
]


def listing():
    out = ["", "\tcode for sm_90a", "\t\tFunction : kern_a"]
    out += [f"        /*{16 * i:04x}*/                   {t} ;{ENC}" for i, t in enumerate(BODY_A)]
    out += ["\t\tFunction : kern_b", f"        /*0000*/                   FMUL R1, R2, R3 ;{ENC}"]
    out += ["\tcode for sm_100a", "\t\tFunction : kern_a", f"        /*0000*/                   FFMA R1, R3, R5, R7 ;{ENC}"]
    return "\n".join(out)


def main():
    fns = sb.functions(listing())
    ok = list(fns) == ["kern_a", "kern_b", "kern_a [sm_100a]"] and len(fns["kern_a"]) == len(BODY_A)
    ok &= fns["kern_b"] == ["FMUL R1, R2, R3"] and fns["kern_a"][6] == "@!P0 FFMA R22, -R24, R25, RZ"
    got2, got4 = sb.bank_stats(fns["kern_a"], 2), sb.bank_stats(fns["kern_a"], 4)
    ok &= got2 == (8, 6, 2) and got4 == (8, 3, 0)
    ok &= sb.bank_stats(fns["kern_b"], 2) == (0, 0, 0) and sb.bank_stats(fns["kern_a [sm_100a]"], 2) == (1, 1, 1)
    print(f"functions {list(fns)}, banks 2 {got2}, banks 4 {got4}")
    print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
