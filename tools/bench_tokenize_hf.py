#!/usr/bin/env python3
# HF tokenizers encode throughput on the same input as bench/bench_tokenize.c (same arguments), one thread.
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
from tokenizers import Tokenizer  # noqa: E402


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "models/tokenizer/tokenizer.json"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tok = Tokenizer.from_file(path)
    texts = []
    corpus = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(path), "hf_corpus.txt")
    with open(corpus, "rb") as f:
        for line in f:
            if len(sys.argv) > 3:
                texts.append(line.decode("utf-8", "replace"))
            elif not line.startswith(b"#") and b"\t" in line:
                texts.append(bytes.fromhex(line.split(b"\t", 1)[0].decode()).decode("utf-8", "replace"))
    mb = sum(len(t.encode()) for t in texts) / 1e6
    for name, fn in (("encode loop", lambda: [tok.encode(t, add_special_tokens=False) for t in texts]),
                     ("encode_batch 1 thread", lambda: tok.encode_batch(texts, add_special_tokens=False))):
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        med = sorted(times)[runs // 2]
        print(f"HF tokenizers {name} {corpus}: {len(texts)} strings, {mb:.2f} MB; median of {runs} runs {med:.3f} s: "
              f"{mb / med:.2f} MB/s")


if __name__ == "__main__":
    main()
