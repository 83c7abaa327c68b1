#!/usr/bin/env python3
# tools/ncu_stalls on a hand-written listing and source page: classes, reuse, yields, offsets counted, refusals.
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "ncu_stalls")

KEEP = 0x000FE20000000000  # bit 45 set: the warp stays on
YIELD = 0x000FC00000000000
# (offset text, high word, executed, selected, dispatch, misc, not selected, wait)
BODY = [
    ("FFMA R1, R2, R4.reuse, R6", KEEP, 10, 4, 1, 0, 0, 0),  # reads 3 (nothing before)
    ("FFMA R3, R5, R4, R7", YIELD, 10, 4, 2, 0, 0, 0),       # R4 kept by the one before: reads 2; yields
    ("FFMA R8, R9, R4, R10", KEEP, 10, 2, 6, 3, 5, 0),       # after a yielding FFMA
    ("FFMA R11, R13.reuse, R12, RZ", KEEP, 10, 4, 0, 0, 0, 0),  # RZ is not read: reads 2
    ("FFMA R14, R13, R15, R16", KEEP, 10, 4, 2, 0, 0, 0),    # R13 kept in slot a: reads 2
    ("FFMA R17, R13, R18, R19", KEEP, 10, 2, 2, 0, 0, 0),    # R13 again, but not kept (no .reuse before): reads 3
    ("LDS.128 R16, [R20]", KEEP, 10, 3, 0, 0, 1, 6),
    ("@!P0 FFMA R22, -R24, R25, R26", KEEP, 10, 2, 1, 0, 0, 0),  # after an LDS: reads 3
    ("FFMA R27, R28, R29, R30", KEEP, 0, 0, 0, 0, 0, 0),     # never executed: not counted
    ("BRA 0x0", KEEP, 10, 1, 0, 0, 0, 9),                    # outside --to when it is given
]
KERNEL = "_Z4kernPf"


def listing():
    out = ["", "\tcode for sm_90a", f"\t\tFunction : {KERNEL}"]
    for i, (t, hi, *_r) in enumerate(BODY):
        out.append(f"        /*{16 * i:04x}*/                   {t} ;   /* 0x000000000000{i:04x} */")
        out.append(f"                                                             /* {hi:#018x} */")
    out += ["\t\tFunction : _Z5otherv", "        /*0000*/                   EXIT ;   /* 0x0 */", "   /* 0x0 */"]
    return "\n".join(out) + "\n"


def source(rows):
    head = ["Address", "Source", "Instructions Executed", "stall_selected", "stall_dispatch", "stall_misc",
            "stall_not_selected", "stall_wait"]
    lines = ['"Kernel Name","kern(float *)"', ",".join(f'"{h}"' for h in head)]
    for i, (t, _hi, *r) in enumerate(rows):
        lines.append(",".join(f'"{v}"' for v in [hex(0x7F00 + 16 * i), "      " + t] + r))
    return "\n".join(lines) + "\n"


def run(d, csv_rows, *args):
    with open(os.path.join(d, "src.csv"), "w") as f:
        f.write(source(csv_rows))
    p = subprocess.run([sys.executable, TOOL, os.path.join(d, "src.csv"), os.path.join(d, "k.sass"), *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def parse(out):
    """{class: (instructions, samples, dispatch, misc, not selected, wait)} from the tool's table."""
    got = {}
    for line in out.splitlines()[1:]:
        name, nums = line[:36].strip(), line[36:].split()
        got[name] = (int(nums[0]), int(nums[1])) + tuple(float(x) for x in nums[2:])
    return got


def main():
    ok, checks = True, []
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "k.sass"), "w") as f:
            f.write(listing())
        rc, out, err = run(d, BODY, "kern")
        got = parse(out)
        want = {"FFMA reading 3 registers": (3, 12, 0.5, 0.0, 0.0, 0.0),
                "FFMA reading 2 registers": (3, 16, 0.33, 0.0, 0.0, 0.0),
                "FFMA after a yielding FFMA": (1, 16, 3.0, 1.5, 2.5, 0.0),
                "LDS": (1, 10, 0.0, 0.0, 0.33, 2.0), "BRA": (1, 10, 0.0, 0.0, 0.0, 9.0)}
        checks.append(("classes", rc == 0 and got == want, f"rc {rc} {got} {err.strip()}"))
        rc, out, err = run(d, BODY, "kern", "--to", "70")
        checks.append(("--to", rc == 0 and "BRA" not in parse(out) and len(parse(out)) == 4, out + err))
        bad = list(BODY)
        bad[6] = ("STS [R20], R16",) + bad[6][1:]
        rc, out, err = run(d, bad, "kern")
        checks.append(("other binary", rc == 1 and "1 of 10 rows differ" in err and "0x60" in err, err.strip()))
        rc, out, err = run(d, BODY, "nosuch")
        checks.append(("no kernel", rc == 1 and "0 kernels match 'nosuch'" in err, err.strip()))
        rc, out, err = run(d, BODY, "_")
        checks.append(("two kernels", rc == 1 and "2 kernels match '_'" in err and "(name one)" in err, err.strip()))
        with open(os.path.join(d, "src.csv"), "w") as f:
            f.write('"Kernel Name","k"\n"Address","Source","Instructions Executed"\n"0x10","FFMA R1, R2, R3, R4","1"\n')
        p = subprocess.run([sys.executable, TOOL, os.path.join(d, "src.csv"), os.path.join(d, "k.sass"), "kern"],
                           capture_output=True, text=True)
        checks.append(("no stall columns", p.returncode == 1 and "no stall_* columns" in p.stderr, p.stderr.strip()))
    for name, good, detail in checks:
        print(f"{'ok  ' if good else 'FAIL'} {name}" + ("" if good else f": {detail}"))
        ok &= good
    n = sum(1 for c in checks if c[1])
    print(f"{n} passed, {len(checks) - n} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
