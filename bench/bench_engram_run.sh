#!/usr/bin/env bash
# On the GPU machine, from build-dev (tools/device_build): Engram tests, contract and benchmark; a table last.
set -uo pipefail
out=${OUT:-out}
b=${1:-build-dev}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$PWD/$b/lib
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$out/gpu.txt"
for t in "$b"/test_engram "$b"/test_engram_layer; do
    DSF_BIN="$b"/dsfold "$t" >"$out/$(basename "$t").log" 2>&1
    echo "$(basename "$t") rc=$? $(tail -n 1 "$out/$(basename "$t").log")"
done
timeout 120 "$b"/dsfold contract --backend cuda --only engram --json "$out/contract.json" >"$out/contract.log" 2>&1
echo "contract rc=$?"
grep -v '^ *$' "$out/contract.log" | grep -vE '^(cpu|cuda):' | head -40
timeout 200 "$b"/bench_engram 1000000 >"$out/bench.txt" 2>&1
echo "bench rc=$?"
timeout 90 python3 bench/bench_engram_torch.py "$out/bench.txt" >"$out/torch.txt" 2>&1
echo "torch rc=$?"
# The 4096-token wkv against cuBLASLt's FP8 GEMM, then its bf16 GEMM, in alternating rounds of equal length (perf.md).
timeout 150 "$b"/bench_engram 1000 4096 matched 3 >"$out/matched.txt" 2>&1
echo "matched rc=$?"
timeout 150 "$b"/bench_engram 1000 4096 matched_bf16 3 >>"$out/matched.txt" 2>&1
echo "matched_bf16 rc=$?"
# The engine's wkv against PyTorch's same math on the same codes (bench_engram_torch.py --check), bit for bit.
d=$(mktemp -d)
for T in 1 8 64 4096; do
    mkdir -p "$d/t$T" && timeout 120 "$b"/bench_engram 1000 "$T" dump "$d/t$T" >>"$out/same.txt" 2>&1
    echo "dump t$T rc=$?"
done
timeout 150 python3 bench/bench_engram_torch.py --check "$d"/t1 "$d"/t8 "$d"/t64 "$d"/t4096 >>"$out/same.txt" 2>&1
echo "same rc=$?"
rm -rf "$d"
grep -E "gather_t(1|64|4096)_threads16|equals|wkv_t[0-9]+_(wg|best)|gate_t[0-9]+_(t256_w64|st_t512_w8)" "$out/bench.txt"
grep -E '^SUMMARY' "$out/contract.log"
tail -n 8 "$out/torch.txt"
grep -E "dump_t[0-9]+_geom|torch_same_t[0-9]+_(differing|max_ulps)" "$out/same.txt"
grep -E "matched(_bf16)?_(t4096_geom|calls_ratio|(short|long|soaked)_(r[0-9]+_of_lt|lowest_of_lt|lt_highest_TFLOPs))" "$out/matched.txt"
