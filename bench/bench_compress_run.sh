#!/usr/bin/env bash
# On the GPU machine, from build-dev (tools/device_build) or a folder of those binaries: tests, contract, bench.
set -uo pipefail
out=${OUT:-out}
b=${1:-build-dev}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$b/lib
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$out/gpu.txt"
(timeout 100 "$b"/test_compress_cuda >"$out/test.log" 2>&1; echo "test_compress_cuda rc=$?" >>"$out/test.log") &
timeout 100 "$b"/dsfold contract --backend cuda --only compress >"$out/contract.log" 2>&1
echo "contract rc=$?"
wait
timeout 120 "$b"/bench_compress >"$out/bench.txt" 2>&1
echo "bench rc=$?"
if [ -x "$b"/bench_compress_base ]; then # two alternating pairs against the base build, every digest compared
    a=bench/bench_compress_ab.py
    [ -f "$b/bench_compress_ab.py" ] && a=$b/bench_compress_ab.py
    timeout 400 python3 "$a" --pairs 2 "$b"/bench_compress_base "$b"/bench_compress >"$out/ab.txt" 2>&1
    echo "ab rc=$?"
fi
t=bench/bench_compress_torch.py
[ -f "$b/bench_compress_torch.py" ] && t=$b/bench_compress_torch.py
timeout 50 python3 "$t" "$out/bench.txt" >"$out/torch.txt" 2>&1
echo "torch rc=$?"
grep -v '^ *$' "$out/contract.log" | grep -vE '^(cpu|cuda):' | grep -v ' pass ' | head -20
tail -n 3 "$out/test.log"
cat "$out/ab.txt" 2>/dev/null
cat "$out/bench.txt"
tail -n 21 "$out/torch.txt"
grep -E '^SUMMARY' "$out/contract.log"
