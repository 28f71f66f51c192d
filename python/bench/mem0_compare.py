#!/usr/bin/env python3
"""``membank.Memory.recall`` against ``mem0.Memory.search``, same machine, same run.

Both libraries get the same N memories of one user (short first-person facts about a
thousand relatives and friends, made from templates with a fixed seed), stored one call
at a time, then the same questions, each aimed at one stored fact. Both embed with the
same model, all-MiniLM-L6-v2 from membank's model directory (mem0 through
sentence-transformers, membank through its own forward pass). mem0 is configured fully
locally: the ``huggingface`` embedder on that directory, Qdrant's local (embedded) store
on disk, its SQLite history, ``add(..., infer=False)`` so no LLM is called (its LLM config is a dummy that is
never used), telemetry off, the hub offline.

Measured per library: the ingest (wall time for all N ``add``/``remember`` calls), and
the latency of each search (``perf_counter`` around one call, after a few warm-up calls):
median, p95 and mean; plus hit@1 and hit@5, whether the aimed-at fact came back. membank
is measured twice: ``recall`` as it is by default (it strengthens what it returns: one
write transaction per recall) and ``recall(strengthen=False)`` (read only, like mem0's
search).

    python bench/mem0_compare.py --n 10000 --queries 200 --out results.json

``--mem0-store faiss`` uses mem0's FAISS store instead; it rewrites its whole index file on
every ``add``, so its ingest grows with the square of N (python/NOTES.md).

Needs, in one venv: the membank wheel (release build), ``mem0ai``, ``sentence-transformers``
and ``qdrant-client`` (a dependency of mem0ai), ``faiss-cpu`` for ``--mem0-store faiss``
(see python/NOTES.md for the exact setup).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

# Before anything imports huggingface_hub or mem0: no network, no telemetry.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEM0_TELEMETRY", "False")

NAMES = (
    "Maria Jonas Aiko Liam Sofia Mateo Nadia Omar Greta Pavel Ines Tariq Chloe Ravi Elena Hugo "
    "Yara Felix Mina Diego Astrid Kofi Lena Bruno Zara Emil Noor Tomas Iris Dario Selma Ivan "
    "Clara Joao Hana Marek Lucia Anders Priya Rafael Ingrid Kenji Amara Viktor Leila Oscar "
    "Freya Samir Julia Nico Alma Teo Rosa Arjun Vera Milo Ada Luca Nina Pedro Eva Karim Lotte "
    "Sven Dalia Marco Elif Jan Rhea Tobias Mila Andre Sara Yusuf Tilda Enzo Maya Goran Lina "
    "Hector Signe Ali Petra Lars Ayla Jorge Ulla Ren Daria Colm Inka Beno Wren Fabio Edda"
).split()
RELATIONS = "friend cousin neighbour colleague sister brother aunt uncle boss teacher".split()
FACTS: List[Tuple[str, str, List[str]]] = [
    ("{s} lives in {v}.", "Where does {s} live?", "Lisbon Porto Oslo Kyoto Lima Cairo Quito Riga Gdansk Turin Lyon Leeds Cork Bergen Busan Perth".split()),
    ("{s} works as a {v}.", "What is {s}'s job?", "nurse pilot baker plumber lawyer chemist architect translator carpenter dentist librarian firefighter".split()),
    ("{s} plays the {v}.", "Which instrument does {s} play?", "cello violin piano drums trumpet harp flute banjo accordion saxophone".split()),
    ("{s} is allergic to {v}.", "What is {s} allergic to?", "peanuts shellfish pollen cats penicillin latex strawberries eggs wasps dust".split()),
    ("{s} drives an old {v}.", "What car does {s} drive?", "Volvo Fiat Saab Citroen Skoda Mini Beetle Land-Rover Peugeot Lada".split()),
    ("{s} has a {v} called Biscuit.", "What pet does {s} have?", "parrot tortoise greyhound rabbit goldfish ferret hamster pony iguana".split()),
    ("{s}'s birthday is in {v}.", "When is {s}'s birthday?", "January February March April May June July August September October November December".split()),
    ("{s} supports {v} at football.", "Which football team does {s} support?", "Benfica Ajax Celtic Napoli Boca Porto Lazio Feyenoord Galatasaray Brentford".split()),
    ("{s} collects {v}.", "What does {s} collect?", "stamps coins vinyl records postcards fossils comics teapots maps keys".split()),
    ("{s} is learning {v}.", "Which language is {s} learning?", "Japanese Finnish Swahili Korean Greek Arabic Welsh Turkish Icelandic Hindi".split()),
    ("{s} can't stand {v}.", "What can't {s} stand?", "coriander jazz mornings queues karaoke olives horror films cold coffee".split()),
    ("{s} spent last summer in {v}.", "Where did {s} spend last summer?", "Crete Iceland Sicily Bali Patagonia Lapland Sardinia Madeira Skye Corsica".split()),
]


def corpus(n: int, queries: int, seed: int) -> Tuple[List[str], List[Tuple[str, int]]]:
    """N distinct facts, and questions each aimed at one of them (by index)."""
    rng = random.Random(seed)
    subjects = [f"my {r} {name}" for r in RELATIONS for name in NAMES]
    facts: Dict[Tuple[int, int], int] = {}
    texts: List[str] = []
    aims: List[Tuple[int, int]] = []
    while len(texts) < n:
        subject, fact = rng.randrange(len(subjects)), rng.randrange(len(FACTS))
        if (subject, fact) in facts:
            continue
        template, _, values = FACTS[fact]
        text = template.format(s=subjects[subject], v=rng.choice(values))
        facts[(subject, fact)] = len(texts)
        texts.append(text[0].upper() + text[1:])
        aims.append((subject, fact))
    asked = []
    for index in rng.sample(range(n), queries):
        subject, fact = aims[index]
        asked.append((FACTS[fact][1].format(s=subjects[subject]), index))
    return texts, asked


def percentile(values: List[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def timed_searches(search: Callable[[str], List[str]], asked: List[Tuple[str, int]], ids: List[str], warmup: int) -> Dict[str, Any]:
    for query, _ in asked[:warmup]:
        search(query)
    latencies, hit1, hit5 = [], 0, 0
    for query, index in asked:
        began = time.perf_counter()
        found = search(query)
        latencies.append((time.perf_counter() - began) * 1000)
        hit1 += bool(found[:1] == [ids[index]])
        hit5 += ids[index] in found[:5]
    return {
        "queries": len(asked),
        "median_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(percentile(latencies, 95), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        "hit_at_1": round(hit1 / len(asked), 3),
        "hit_at_5": round(hit5 / len(asked), 3),
    }


def bench_membank(texts: List[str], asked: List[Tuple[str, int]], where: Path, model_dir: Path, warmup: int) -> Dict[str, Any]:
    import membank

    began = time.perf_counter()
    memory = membank.Memory(db=where / "membank.db", model_dir=model_dir)
    opened = time.perf_counter() - began
    began = time.perf_counter()
    ids = [memory.remember("bench", text) for text in texts]
    ingest = time.perf_counter() - began
    out: Dict[str, Any] = {
        "version": membank.__version__,
        "open_s": round(opened, 3),
        "ingest_s": round(ingest, 1),
        "ingest_ms_per_memory": round(ingest / len(texts) * 1000, 2),
    }
    out["recall_strengthen_false"] = timed_searches(
        lambda q: [h.id for h in memory.recall("bench", q, k=5, strengthen=False)], asked, ids, warmup
    )
    out["recall_default"] = timed_searches(lambda q: [h.id for h in memory.recall("bench", q, k=5)], asked, ids, warmup)
    memory.close()
    out["db_mb"] = round(sum(f.stat().st_size for f in where.glob("membank.db*")) / 2**20, 1)
    return out


def bench_mem0(
    texts: List[str], asked: List[Tuple[str, int]], where: Path, model_dir: Path, warmup: int, store: str, add_sample: int
) -> Dict[str, Any]:
    from importlib.metadata import version

    from mem0 import Memory

    config = {
        "embedder": {"provider": "huggingface", "config": {"model": str(model_dir), "embedding_dims": 384}},
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "bench", "path": str(where / "qdrant"), "embedding_model_dims": 384},
        }
        if store == "qdrant"
        else {
            "provider": "faiss",
            "config": {
                "collection_name": "bench",
                "path": str(where / "faiss"),
                "distance_strategy": "cosine",
                "embedding_model_dims": 384,
            },
        },
        # Never called: add(infer=False) and search make no LLM call. mem0 builds an LLM
        # client at construction, so it gets one that points nowhere.
        "llm": {"provider": "openai", "config": {"api_key": "sk-unused", "model": "gpt-4o-mini", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(where / "mem0-history.db"),
    }
    began = time.perf_counter()
    memory = Memory.from_config(config)
    opened = time.perf_counter() - began
    sample = min(add_sample, len(texts))
    began = time.perf_counter()
    ids = []
    for text in texts[:sample]:
        result = memory.add(text, user_id="bench", infer=False)
        ids.append(result["results"][0]["id"])
    ingest = time.perf_counter() - began
    out: Dict[str, Any] = {
        "version": version("mem0ai"),
        "vector_store": store,
        "open_s": round(opened, 3),
        "add_calls_timed": sample,
        "ingest_s_of_timed_adds": round(ingest, 1),
        "ingest_ms_per_memory": round(ingest / sample * 1000, 2),
    }
    if sample < len(texts):
        # The rest in bulk, so the search runs over N memories within the hour: mem0's own
        # embedder (a batch) and vector store (batches), with the payload add() wrote for
        # the first memory, text fields replaced as _create_memory makes them. Only the
        # history rows are left out; search does not read them.
        import hashlib
        import uuid
        from datetime import datetime, timezone

        from mem0.utils.lemmatization import lemmatize_for_bm25

        template = dict(memory.vector_store.get(vector_id=ids[0]).payload)
        began = time.perf_counter()
        for start in range(sample, len(texts), 256):
            chunk = texts[start : start + 256]
            vectors = memory.embedding_model.embed_batch(chunk, memory_action="add")
            payloads, chunk_ids = [], []
            for text in chunk:
                now = datetime.now(timezone.utc).isoformat()
                payloads.append(
                    dict(template, data=text, hash=hashlib.md5(text.encode()).hexdigest(), created_at=now, updated_at=now, text_lemmatized=lemmatize_for_bm25(text))
                )
                chunk_ids.append(str(uuid.uuid4()))
            memory.vector_store.insert(vectors=vectors, ids=chunk_ids, payloads=payloads)
            ids.extend(chunk_ids)
        out["bulk_loaded"] = len(texts) - sample
        out["bulk_load_s"] = round(time.perf_counter() - began, 1)
    out["search"] = timed_searches(
        lambda q: [r["id"] for r in memory.search(q, top_k=5, filters={"user_id": "bench"}, threshold=0.0)["results"]],
        asked,
        ids,
        warmup,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="memories stored (default 10000)")
    parser.add_argument("--queries", type=int, default=200, help="timed searches (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed searches first (default 10)")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "membank" / "models" / "all-MiniLM-L6-v2",
    )
    parser.add_argument("--only", choices=["membank", "mem0"], help="run one side only")
    parser.add_argument("--mem0-store", choices=["qdrant", "faiss"], default="qdrant", help="mem0's vector store")
    parser.add_argument(
        "--mem0-adds",
        type=int,
        default=10_000_000,
        help="store only the first this many through mem0's add() (timed); the rest in bulk through mem0's embedder and store",
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here too")
    args = parser.parse_args()
    texts, asked = corpus(args.n, args.queries, args.seed)
    results: Dict[str, Any] = {
        "n": args.n,
        "machine": {
            "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor()),
            "cores": os.cpu_count(),
            "python": sys.version.split()[0],
        },
    }
    with tempfile.TemporaryDirectory(prefix="mem0-compare-") as tmp:
        where = Path(tmp)
        if args.only in (None, "membank"):
            results["membank"] = bench_membank(texts, asked, where, args.model_dir, args.warmup)
            print(json.dumps({"membank": results["membank"]}, indent=2), flush=True)
        if args.only in (None, "mem0"):
            import torch

            results["machine"]["torch_threads"] = torch.get_num_threads()
            results["mem0"] = bench_mem0(texts, asked, where, args.model_dir, args.warmup, args.mem0_store, args.mem0_adds)
            print(json.dumps({"mem0": results["mem0"]}, indent=2), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
