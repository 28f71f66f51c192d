#!/usr/bin/env python3
"""Builds the benchmark sentence file: one sentence per line.

The user `query` texts of MemoryBank (users -> history -> date -> turns), deduplicated in
order of appearance; if there are fewer than --n, LoCoMo turn texts fill up the rest.
Newlines inside a text are replaced by spaces so that one line is one sentence.
"""

import argparse
import json


def memorybank_queries(path):
    with open(path, encoding="utf-8") as f:
        users = json.load(f)
    for user in users.values():
        for _date, turns in user.get("history", {}).items():
            for turn in turns:
                query = turn.get("query")
                if isinstance(query, str):
                    yield query


def locomo_turns(path):
    with open(path, encoding="utf-8") as f:
        samples = json.load(f)
    for sample in samples:
        conversation = sample.get("conversation", {})
        sessions = [k for k in conversation if k.startswith("session_") and not k.endswith("date_time")]
        sessions.sort(key=lambda k: int(k.split("_")[1]))
        for key in sessions:
            for turn in conversation[key]:
                text = turn.get("text")
                if isinstance(text, str):
                    yield text


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memorybank", default="/work/shared/data/memorybank/memory_bank_en.json")
    parser.add_argument("--locomo", default="/work/shared/data/locomo/locomo10.json")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    seen, sentences = set(), []
    for source in (memorybank_queries(args.memorybank), locomo_turns(args.locomo)):
        for text in source:
            text = " ".join(text.split())
            if text and text not in seen:
                seen.add(text)
                sentences.append(text)
            if len(sentences) >= args.n:
                break
        if len(sentences) >= args.n:
            break
    with open(args.out, "w", encoding="utf-8") as f:
        for sentence in sentences:
            f.write(sentence + "\n")
    print(f"wrote {len(sentences)} sentences to {args.out}")


if __name__ == "__main__":
    main()
