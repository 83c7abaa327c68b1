#!/usr/bin/env python3
# tools/sass_yield on a hand-built CUDA ELF inside a host blob: which FFMAs yield, which keep operand b, what stays.
import importlib.machinery
import importlib.util
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "sass_yield")
loader = importlib.machinery.SourceFileLoader("sass_yield", TOOL)
spec = importlib.util.spec_from_loader("sass_yield", loader)
sy = importlib.util.module_from_spec(spec)
loader.exec_module(sy)

# High words as ptxas writes them around FFMAs: stall 1, then with or without the warp kept on and a reuse flag.
HI_PLAIN = 0x000FC20000000000
HI_KEEP_REUSE_A = 0x040FE20000000000
LOP3 = (0x0000001F00167812, 0x000FE200078EC0FF)


def ffma(d, a, b, c, hi=HI_PLAIN, guard=7):
    return (0x223 | guard << 12 | d << 16 | a << 24 | b << 32, hi | c)


# A run of 11 FFMAs (an LOP3 inside it), three other instructions (the run ends), a run of 3 (too short: left alone).
CODE = [ffma(121, 26, 22, 121, HI_KEEP_REUSE_A), ffma(118, 27, 22, 118), ffma(119, 30, 21, 119),
        ffma(116, 31, 22, 116, HI_KEEP_REUSE_A), ffma(129, 34, 22, 129), LOP3, ffma(137, 24, 23, 137),
        ffma(136, 25, 23, 136, guard=0), ffma(135, 28, 23, 135), ffma(23, 29, 23, 132), ffma(131, 32, 23, 131),
        ffma(130, 33, 23, 130), LOP3, LOP3, LOP3,
        ffma(1, 2, 4, 6, HI_KEEP_REUSE_A), ffma(3, 5, 4, 7), ffma(8, 9, 4, 10)]
# (index, yields, keeps b): 3, 8 yield; b not kept by 1, 2 (other b next), 4, 11 (no FFMA next), 6, 7 (guards), 9.
WANT = [(0, 0, 1), (1, 0, 0), (2, 0, 0), (3, 1, 0), (4, 0, 0), (6, 0, 0), (7, 0, 0), (8, 1, 0), (9, 0, 0), (10, 0, 1),
        (11, 0, 0)]


def branch(op, off):
    """A BRA, CALL or WARPSYNC (op) to off bytes from the next instruction, in their split layout."""
    far = off >> 10
    lo = op | 7 << 12 | ((off >> 2) & 0xFF) << 16 | (far & (1 << 30) - 1) << 34
    return (lo, 0x000FEA0000000000 | (far >> 30) & 0x3FFFF)


def bssy(off):
    return (0x945 | 7 << 12 | (off & 0xFFFFFFFF) << 32, 0x000FE20000000000 | (off >> 32) & 0x3FFFF)


# Nine FFMAs on one b, then a jump back to index 2 (so 1 keeps nothing); the same with an unknown jump (0x949) instead.
JUMPED = [ffma(40 + k, 2 * k, 22, 41 + k) for k in range(9)] + [branch(0x947, (2 - 10) * 16)]
UNKNOWN = JUMPED[:9] + [(0x7949, HI_PLAIN)]


def cuda_elf(sections, sm=90, abi=8, nobits=0):
    """An ELF64 image for EM_CUDA and SM sm holding [(name, bytes)], then a NOBITS section of nobits bytes."""
    extra = [".nv.shared.x"] if nobits else []
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [n for n, _ in sections] + extra) + b".shstrtab\0"
    body, offs, pos = b"", [], 64
    for _, data in sections:
        offs.append(pos + len(body))
        body += data
    strtab_off = pos + len(body)
    body += names
    shoff = pos + len(body)
    n_sec = len(sections) + len(extra) + 2
    hdr = bytearray(64)
    hdr[0:4], hdr[4], hdr[5], hdr[6], hdr[7], hdr[8] = b"\x7fELF", 2, 1, 1, 0x41, abi
    struct.pack_into("<HH", hdr, 0x10, 2, sy.EM_CUDA)
    struct.pack_into("<I", hdr, 0x30, 0x6000004 | sm << 8 if abi >= 8 else sm << 16 | 0x500 | sm)
    struct.pack_into("<Q", hdr, 0x28, shoff)
    struct.pack_into("<HHH", hdr, 0x3A, 64, n_sec, n_sec - 1)
    shdrs, at = bytes(64), 1
    for (n, data), off in zip(sections, offs):
        shdrs += struct.pack("<IIQQQQIIQQ", at, 1, 6, 0, off, len(data), 0, 0, 16, 0)
        at += len(n) + 1
    if nobits:  # its offset is the end of the file and its size runs past it, as static shared memory's does
        shdrs += struct.pack("<IIQQQQIIQQ", at, sy.SHT_NOBITS, 3, 0, shoff + 64 * n_sec, nobits, 0, 0, 16, 0)
        at += len(extra[0]) + 1
    shdrs += struct.pack("<IIQQQQIIQQ", at, 3, 0, 0, strtab_off, len(names), 0, 0, 1, 0)
    return bytes(hdr) + body + shdrs


def words(code):
    return b"".join(struct.pack("<QQ", lo, hi) for lo, hi in code)


def host_blob():
    """A host ELF header (x86-64: skipped), the sm_90 image 40 bytes on, an sm_100 one (another encoding: skipped)."""
    host = bytearray(64)
    host[0:4], host[4] = b"\x7fELF", 2
    struct.pack_into("<H", host, 0x12, 62)
    cuda = cuda_elf([(".text._Z11eng_wkv_wgtILi128EEv", words(CODE)), (".text._Z5otherv", words(CODE))])
    sm100 = cuda_elf([(".text._Z11eng_wkv_wgtILi128EEv", words(CODE))], sm=100)
    return bytearray(bytes(host) + bytes(40) + cuda + sm100), 64 + 40


def main():
    buf, at = host_blob()
    ok = sy.cubins(bytes(buf)) == [at]
    secs = {n: (off, size) for n, off, size in sy.sections(buf, at)}
    ok &= secs[".text._Z11eng_wkv_wgtILi128EEv"][1] == 16 * len(CODE)
    ok &= [len(r) for r in sy.runs(CODE)] == [11]
    matched, n_runs, changed = sy.patch(buf, ["eng_wkv_wgt"], 4)
    ok &= (matched, n_runs) == (1, 1) and changed > 0
    off, _ = secs[".text._Z11eng_wkv_wgtILi128EEv"]
    got = [struct.unpack_from("<QQ", buf, off + 16 * i) for i in range(len(CODE))]
    for i, yields, keeps_b in WANT:
        hi = got[i][1]
        ok &= (not hi & sy.NO_YIELD) == bool(yields) and bool(hi & sy.REUSE_B) == bool(keeps_b)
    # Only bits 45 and 58-61 of an FFMA may change; other instructions and the short run keep every bit.
    ok &= all(g[0] == c[0] and not (g[1] ^ c[1]) & ~(sy.NO_YIELD | sy.REUSE_ALL) for g, c in zip(got, CODE))
    ok &= got[5] == LOP3 and got[12:] == CODE[12:]
    off2, _ = secs[".text._Z5otherv"]
    ok &= [struct.unpack_from("<QQ", buf, off2 + 16 * i) for i in range(len(CODE))] == CODE
    at100 = at + len(cuda_elf([(".text._Z11eng_wkv_wgtILi128EEv", words(CODE)), (".text._Z5otherv", words(CODE))]))
    off3 = [o for n, o, _ in sy.sections(buf, at100) if n.startswith(".text.")][0]
    ok &= sy.sm_of(buf, at100) == 100
    ok &= [struct.unpack_from("<QQ", buf, off3 + 16 * i) for i in range(len(CODE))] == CODE
    ok &= sy.patch(buf, ["eng_wkv_wgt"], 4)[2] == 0  # a second pass changes nothing
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.o")
        with open(path, "wb") as f:
            f.write(host_blob()[0])
        check = [sys.executable, TOOL, "--check", "--kernel", "eng_wkv_wgt", path]
        rc1 = subprocess.run(check, capture_output=True).returncode
        rc2 = subprocess.run([sys.executable, TOOL, "--kernel", "eng_wkv_wgt", path], capture_output=True).returncode
        rc3 = subprocess.run(check, capture_output=True).returncode
        ok &= (rc1, rc2, rc3) == (1, 0, 0)
    # Targets: a jump forward and back, a call and its return point, a convergence point; unknown control flow.
    flow = [branch(0x947, 3 * 16), branch(0x947, -2 * 16), branch(0x944, 16), bssy(5 * 16), LOP3, LOP3, LOP3, LOP3]
    ok &= sy.targets(flow) == {0, 3, 4, 9} and sy.targets(UNKNOWN) is None
    keep = lambda code: [i for i, hi in sy.pattern(code, 4).items() if hi & sy.REUSE_B]
    ok &= keep(JUMPED) == [0, 2, 4, 5, 6] and keep(UNKNOWN) == []
    yields = [i for i, hi in sy.pattern(UNKNOWN, 4).items() if not hi & sy.NO_YIELD]
    ok &= yields == [3, 7]
    # An ABI 7 image keeps the SM in e_flags' low byte; NOBITS sections need no bytes; a cut image is skipped whole.
    old = bytearray(cuda_elf([(".text._Z11eng_wkv_wgtv", words(CODE))], abi=7, nobits=48 * 1024))
    ok &= sy.sm_of(old, 0) == 90 and sy.patch(old, ["eng_wkv_wgt"], 4)[:2] == (1, 1)
    cut = bytearray(cuda_elf([(".text._Z11eng_wkv_wgtv", words(CODE))])[:-40])
    ok &= sy.patch(cut, ["eng_wkv_wgt"], 4) == (0, 0, 0)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "y.o")
        with open(path, "wb") as f:
            f.write(cut)
        rc4 = subprocess.run([sys.executable, TOOL, "--check", "--kernel", "eng_wkv_wgt", path], capture_output=True)
        rc5 = subprocess.run([sys.executable, TOOL, "--kernel", "eng_wkv_wgt"], capture_output=True)
        ok &= rc4.returncode == 2 and rc5.returncode != 0 and b"no OBJECT" in rc5.stderr
    print(f"runs {[len(r) for r in sy.runs(CODE)]}, check before/after/none {rc1}/{rc3}/{rc4.returncode}, "
          f"kept b {keep(JUMPED)}")
    print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
