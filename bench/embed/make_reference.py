#!/usr/bin/env python3
"""Writes the reference-vector fixture of the membank-embed tests.

Runs the real sentence-transformers pipeline of all-MiniLM-L6-v2 (from a local model
directory, offline) over a fixed set of varied sentences and stores, per sentence, the token
ids the Hugging Face tokenizer produced and the normalised embedding. The Rust test
`tests/it/reference.rs` requires token ids to match exactly and vectors to have cosine
>= 0.999 (in practice they agree to about 1e-6).

Usage:
    .venv-st/bin/python bench/embed/make_reference.py --model-dir DIR \
        --out crates/membank-embed/tests/fixtures/minilm_reference.json
"""

import argparse
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

LONG_TEXT = " ".join(
    f"Sentence number {i} talks about memories, forgetting curves, and the way people recall what they did last summer."
    for i in range(40)
)

SENTENCES = [
    "",
    "Hi",
    "Hello, my name is Emily. Nice to meet you.",
    "I really enjoy painting, playing piano and tea tasting. Do you have any good book recommendations for me?",
    "What did I say about my sister's wedding last week?!?",
    "Café crème, naïve façade, Ångström, Zürich — déjà vu.",
    "The meeting is on 2023-04-27 at 14:30; budget: $1,250.75 (approx. 45% of Q3).",
    "我今天很开心，因为我们去公园散步了。",
    "東京タワーに行きました。とても綺麗でした！",
    "오늘 날씨가 정말 좋네요.",
    "I love pizza 🍕 and my dog 🐶! 👨‍👩‍👧‍👦 family time ❤️",
    "   leading and trailing whitespace\t\tand\ttabs\nand newlines\r\n   ",
    "control\u0000chars\u0007here\u200band\u00adsoft\ufffdhyphen",
    "The [MASK] sat on the [SEP] mat [CLS] today",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "Straße İstanbul ΣΊΣΥΦΟΣ ǅemal ﬁnance",
    "مرحبا بك في عالم الذاكرة",
    "fn main() { println!(\"{}\", x.iter().map(|v| v * 2).sum::<i32>()); }",
    "email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag",
    "?!?!... ---- ((( ))) ''' \"\"\" ~~~ ^^^ |||",
    LONG_TEXT,
    "a" * 150 + " short words after a very long one",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=os.path.expanduser("~/.local/share/membank/models/all-MiniLM-L6-v2"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import sentence_transformers
    import torch

    from sentence_transformers_loader import load_model

    torch.set_num_threads(2)
    model = load_model(args.model_dir)
    assert model.max_seq_length == 256, model.max_seq_length
    vectors = model.encode(SENTENCES, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    token_ids = [model.tokenizer(s, truncation=True, max_length=model.max_seq_length)["input_ids"] for s in SENTENCES]
    fixture = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "generator": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}",
        "script": "bench/embed/make_reference.py",
        "max_seq_length": model.max_seq_length,
        "cases": [
            {"text": text, "token_ids": ids, "vector": [round(float(x), 7) for x in vector]}
            for text, ids, vector in zip(SENTENCES, token_ids, vectors)
        ],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(SENTENCES)} reference vectors to {args.out}")
    for text, ids in zip(SENTENCES, token_ids):
        print(f"{len(ids):4d} tokens  {text[:60]!r}")


if __name__ == "__main__":
    main()
