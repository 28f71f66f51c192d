#!/usr/bin/env python3
"""Repeated-query latency over HTTP with the query cache off (0 MiB) and on (4 MiB).

    python3 scripts/query-cache-bench.py target/release/membank [--rounds 2] [--requests 200]

One store of 300 notes; then, alternating off and on for each round, a fresh `membank serve`
on 127.0.0.1 (rate limit off, no background maintenance) answers the same recall
`--requests` times, and the median and 95th percentile of the round trip are printed with the
cache's hits from `/metrics`. Each server logs to a file in the temporary directory and is
stopped by its own process (terminate, then wait), also when something fails.
"""

import argparse
import http.client
import json
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

QUERY = {"query": "where did I go with my friend last summer?", "k": 5, "strengthen": False}


class Server:
    def __init__(self, binary: str, db: Path, cache_mb: int, log: Path) -> None:
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [binary, "--db", str(db), "serve", "--addr", "127.0.0.1:0", "--query-cache-mb", str(cache_mb),
             "--no-maintenance", "--rate-limit", "0"],
            stdout=subprocess.DEVNULL, stderr=self.log, text=True)
        deadline = time.monotonic() + 120
        address = None
        while address is None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"membank serve did not start; see {log}")
            found = re.search(r"listening on http://(\S+)", log.read_text())
            address = found.group(1) if found else time.sleep(0.05)
        host, port = address.rsplit(":", 1)
        self.http = http.client.HTTPConnection(host, int(port), timeout=60)
        while self.request("GET", "/readyz")[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("membank serve did not become ready")
            time.sleep(0.1)

    def request(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        self.http.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers={"content-type": "application/json"})
        answer = self.http.getresponse()
        return answer.status, answer.read()

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="membank-query-cache-"))
    db = work / "membank.db"
    try:
        server = Server(args.binary, db, 0, work / "load.log")
        try:
            for i in range(300):
                status, _ = server.request("POST", "/v1/users/ann/notes",
                                           {"text": f"Fact number {i}: I visited place {i} with friend {i % 17}."})
                assert status == 201, status
        finally:
            server.stop()
        for round_ in range(args.rounds):
            for cache_mb in (0, 4):
                server = Server(args.binary, db, cache_mb, work / f"serve-{round_}-{cache_mb}.log")
                try:
                    server.request("POST", "/v1/users/ann/recall", QUERY)
                    times = []
                    for _ in range(args.requests):
                        started = time.perf_counter()
                        status, body = server.request("POST", "/v1/users/ann/recall", QUERY)
                        times.append(time.perf_counter() - started)
                        assert status == 200, (status, body[:200])
                    times.sort()
                    _, metrics = server.request("GET", "/metrics")
                finally:
                    server.stop()
                hits = re.search(rb"membank_query_cache_hits_total (\d+)", metrics)
                print(f"round {round_} cache {cache_mb} MiB: p50 {statistics.median(times) * 1000:.2f} ms, "
                      f"p95 {times[int(len(times) * 0.95)] * 1000:.2f} ms, "
                      f"hits {hits.group(1).decode() if hits else '-'}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
