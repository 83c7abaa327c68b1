#!/usr/bin/env python3
# Writes the HF tokenizers reference for the tok tests: a deterministic hostile corpus with its ids, and Engram's map.
import argparse
import hashlib
import json
import os
import random
import sys

import tokenizers
from tokenizers import Regex, Tokenizer, normalizers

STAMP_VERSION = "4"
SENTINEL = "\ue000"

ENGLISH = ("the quick brown fox jumps over lazy dog I you we they it's don't can't won't we'll they've hello "
           "world tokenizer model DeepSeek attention expert router cache GPU CUDA kernel bandwidth Tokyo Paris "
           "a an of to in is was were be been being have has had do does did say said get got make made").split()
CHINESE = "你好世界我们今天天气很好中文分词推理答案模型注意力专家路由缓存北京上海深度求索的了是在不有人这中大为上个国"
JAPANESE = "こんにちは世界ありがとうございますカタカナひらがな漢字東京日本語テストトークナイザーですます"
KOREAN = "안녕하세요세계감사합니다한국어토크나이저테스트서울대한민국"
ARABIC = "مرحبا بالعالم شكرا اللغة العربية اختبار المحلل"
HINDI = "नमस्ते दुनिया धन्यवाद हिंदी भाषा परीक्षण टोकन"
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇺🇸", "🇯🇵", "❤️", "🧑🏿\u200d💻", "☃", "🫠", "1️⃣",
         "👩🏻\u200d🤝\u200d👨🏾", "🐈\u200d⬛", "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u2028", "\u2029", "\u3000", "\u200b", "\ufeff", "\u2009",
          "\u202f", "\u1680", "\u0085", "\x0b", "\x0c", " \n", "\n\n\n", "\t \t", "    "]
CODE = [
    "int main(int argc, char **argv) {\n    return argc > 1 ? 0 : -1;\n}\n",
    "def f(x):\n    return [i ** 2 for i in range(x) if i % 3 == 0]\n",
    "const f = async (a, b) => { await fetch(`/api/${a}?q=${b}`); };",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
    "for f in *.txt; do grep -n 'TODO' \"$f\" | wc -l; done",
    "<div class=\"a\"><span>&lt;x&gt; &amp; y</span></div>",
    "#include <stdio.h>\n#define MAX(a,b) ((a)>(b)?(a):(b))\n",
    "{\"key\": [1, 2.5e-3, true, null], \"nested\": {\"a\": \"b\"}}",
    "x += y; z -= 1; w *= 2; q /= 3; r %= 4; s <<= 1; t >>= 2; u &&= v || !w;",
]
COMBINING = ["\u0301", "\u0300", "\u0308", "\u0327", "\u0323", "\u20dd", "\u0489", "\u036f", "\u1ab0", "\ufe0f"]


def rand_word(rng):
    return rng.choice(ENGLISH) if rng.random() < 0.8 else rng.choice(ENGLISH).capitalize()


def rand_chars(rng, alphabet, lo, hi):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def rand_number(rng):
    n = rng.randint(1, 40)
    digits = "".join(rng.choice("0123456789") for _ in range(n))
    form = rng.randrange(8)
    if form == 1:
        return digits + "." + digits[: rng.randint(1, 6)]
    if form == 2:
        return f"{int(digits):,}"
    if form == 3:
        return "-" + digits + "e" + str(rng.randint(-30, 30))
    if form == 4:
        return "".join(chr(0x0660 + int(d)) for d in digits)
    if form == 5:
        return "".join(chr(0xFF10 + int(d)) for d in digits)
    if form == 6:
        return digits + rng.choice(["²", "³", "½", "Ⅻ", "①", "٫", "%"])
    return digits


def rand_codepoint(rng):
    while True:
        c = rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xFFFF),
                        rng.randint(0x10000, 0x10FFFF)])
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def invalid_bytes(rng):
    pieces = [b"\x80", b"\xbf", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xff", b"\xfe",
              b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3", b"\xf8\x88\x80\x80\x80", b"\xe0\xa0", b"\xf0\x90"]
    out = b""
    for _ in range(rng.randint(1, 8)):
        k = rng.randrange(3)
        if k == 0:
            out += rng.choice(pieces)
        elif k == 1:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
        else:
            out += rand_word(rng).encode() + rng.choice(["", " ", "你"]).encode()
    return out


def every_scalar():
    # Each scalar value once, between a space, a letter and a digit, so a class the regex engine disagrees on shows.
    out, cps = [], [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for i in range(0, len(cps), 256):
        out.append("".join(f" {chr(c)}a{chr(c)}1" for c in cps[i:i + 256]).encode())
    return out


def make_corpus(special, count, seed):
    rng = random.Random(seed)
    gens = []

    def english():
        return " ".join(rand_word(rng) for _ in range(rng.randint(1, 30))) + rng.choice([".", "!", "?", "", "..."])

    def cjk_mix():
        return "".join(rng.choice([rand_chars(rng, CHINESE, 1, 12), rand_chars(rng, JAPANESE, 1, 10),
                                   rand_chars(rng, KOREAN, 1, 8), " ", rand_word(rng), rand_number(rng)])
                       for _ in range(rng.randint(1, 10)))

    def rtl_indic():
        return " ".join(rng.choice([rand_chars(rng, ARABIC, 1, 20), rand_chars(rng, HINDI, 1, 20), rand_word(rng)])
                        for _ in range(rng.randint(1, 8)))

    def emoji():
        return "".join(rng.choice(EMOJI + [" ", rand_word(rng), "\u200d", "\ufe0f"]) for _ in range(rng.randint(1, 12)))

    def combining():
        base = rand_chars(rng, "aeiouAEIOUnczß" + CHINESE[:5], 1, 6)
        return "".join(ch + "".join(rng.choice(COMBINING) for _ in range(rng.randint(0, 5))) for ch in base)

    def code():
        s = rng.choice(CODE)
        return s if rng.random() < 0.5 else s + rng.choice(SPACES) + rng.choice(CODE)

    def numbers():
        return rng.choice(["", " "]).join(rand_number(rng) for _ in range(rng.randint(1, 6)))

    def whitespace():
        return "".join(rng.choice(SPACES + [rand_word(rng), rand_chars(rng, CHINESE, 1, 2), "!", "。"])
                       for _ in range(rng.randint(1, 16)))

    def specials():
        parts = []
        for _ in range(rng.randint(1, 8)):
            k = rng.randrange(5)
            if k == 0:
                parts.append(rng.choice(special))
            elif k == 1:
                tok = rng.choice(special)
                parts.append(tok[: rng.randint(1, max(1, len(tok) - 1))])
            elif k == 2:
                parts.append(rng.choice(["<", "｜", ">", "<｜", "｜>", "</", "<｜DSML｜", "<think", "▁"]))
            else:
                parts.append(rng.choice([english(), cjk_mix(), rng.choice(SPACES)]))
        return "".join(parts)

    def random_scalars():
        return "".join(rand_codepoint(rng) for _ in range(rng.randint(1, 24)))

    def long_text():
        return "".join(rng.choice(gens[:-1])() for _ in range(rng.randint(20, 80)))

    gens = [english, cjk_mix, rtl_indic, emoji, combining, code, numbers, whitespace, specials, random_scalars,
            long_text]
    fixed = ["", " ", "\n", "a", "0", "1234567890", " " * 100, "\n" * 50, "a" * 3000, "你" * 500, "1" * 1000,
             "<｜User｜>你好<｜Assistant｜><think>推理</think>答案<｜end▁of▁sentence｜>", "\r\n" * 20,
             "\u00a0" * 10, "\u3000\u3000x", "x\u2028y", "!!!!!????....", "<<<<｜｜｜>>>>"]
    out = [s.encode() for s in fixed] + [b"\xff", b"\xed\xa0\x80", b"a\xc3", b"\xf0\x9f\x98a"]
    out += every_scalar()
    while len(out) < count:
        if rng.random() < 0.05:
            out.append(invalid_bytes(rng))
        else:
            out.append(rng.choice(gens)().encode())
    return out


def engram_normalizer():
    return normalizers.Sequence([
        normalizers.NFKC(), normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase(),
        normalizers.Replace(Regex(r"[ \t\r\n]+"), " "), normalizers.Replace(Regex(r"^ $"), SENTINEL),
        normalizers.Strip(), normalizers.Replace(SENTINEL, " ")])


def write_engram(tok, path, header):
    norm = engram_normalizer()
    keys = {}
    size = tok.get_vocab_size(with_added_tokens=True)
    with open(path + ".tmp", "w") as f:
        f.write(header + f" size={size}\n")
        for tid in range(size):
            text = tok.decode([tid], skip_special_tokens=False)
            if "\ufffd" in text:
                key = tok.id_to_token(tid)
            else:
                key = norm.normalize_str(text) or text
            mapped = keys.setdefault(key, len(keys))
            f.write(f"{tid}\t{mapped}\t{key.encode().hex()}\n")
    os.replace(path + ".tmp", path)
    return len(keys)


def write_corpus(tok, path, header, count, seed):
    special = [t.content for t in tok.get_added_tokens_decoder().values()]
    corpus = make_corpus(sorted(special), count, seed)
    texts = [b.decode("utf-8", "replace") for b in corpus]
    encs = tok.encode_batch(texts, add_special_tokens=False)
    with open(path + ".tmp", "w") as f:
        f.write(header + f" count={len(corpus)}\n")
        for raw, text, enc in zip(corpus, texts, encs):
            if tok.decode(enc.ids, skip_special_tokens=False) != text:
                sys.exit(f"tok_reference: HF decode(encode(s)) != s for {raw!r}")
            f.write(raw.hex() + "\t" + ",".join(map(str, enc.ids)) + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tokenizer", default="models/tokenizer/tokenizer.json")
    ap.add_argument("--count", type=int, default=16500)
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args()
    with open(args.tokenizer, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.abspath(__file__), "rb") as f:
        script = hashlib.sha256(f.read()).hexdigest()[:16]
    header = (f"# dsfold tok reference v{STAMP_VERSION} tokenizer_sha256={sha} script={script} "
              f"tokenizers={tokenizers.__version__} seed={args.seed}")
    out_dir = os.path.dirname(args.tokenizer)
    corpus_path = os.path.join(out_dir, "hf_corpus.txt")
    engram_path = os.path.join(out_dir, "hf_engram.txt")
    fresh = True
    for p in (corpus_path, engram_path):
        try:
            with open(p) as f:
                fresh = fresh and f.readline().startswith(header)
        except OSError:
            fresh = False
    if fresh:
        return
    tok = Tokenizer.from_file(args.tokenizer)
    write_corpus(tok, corpus_path, header, args.count, args.seed)
    n = write_engram(tok, engram_path, header)
    print(f"tok_reference: wrote {corpus_path} ({args.count} strings) and {engram_path} ({n} distinct keys)")


if __name__ == "__main__":
    main()
