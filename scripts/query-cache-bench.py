#!/usr/bin/env python3
"""Repeated-query latency over HTTP with the query cache off (0 MiB) and on (4 MiB), same
binary, same store, two rounds alternating: `python3 scripts/query-cache-bench.py target/release/membank`.
Each server listens on 127.0.0.1 and is stopped by its own process (terminate + wait)."""
import json, os, subprocess, sys, time, http.client, statistics, tempfile, re
B = sys.argv[1]
d = tempfile.mkdtemp()
db = os.path.join(d, "m.db")
def serve(mb):
    p = subprocess.Popen([B, "--db", db, "serve", "--addr", "127.0.0.1:0", "--query-cache-mb", str(mb), "--no-maintenance", "--rate-limit", "0"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    addr = None
    while addr is None:
        line = p.stderr.readline()
        m = re.search(r"listening on http://(\S+)", line)
        if m: addr = m.group(1)
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port))
    for _ in range(200):
        c.request("GET", "/readyz"); r = c.getresponse(); r.read()
        if r.status == 200: break
        time.sleep(0.1)
    return p, c
def req(c, method, path, body=None):
    c.request(method, path, body=json.dumps(body) if body else None, headers={"content-type": "application/json"})
    r = c.getresponse(); return r.status, r.read()
p, c = serve(4)
for i in range(300):
    req(c, "POST", "/v1/users/ann/notes", {"text": f"Fact number {i}: I visited place {i} with friend {i % 17}."})
p.terminate(); p.wait()
res = {}
for rnd in range(2):
  for mb in (0, 4):
    p, c = serve(mb)
    q = {"query": "where did I go with my friend last summer?", "k": 5, "strengthen": False}
    req(c, "POST", "/v1/users/ann/recall", q)
    ts = []
    for _ in range(200):
        t = time.perf_counter(); s, _ = req(c, "POST", "/v1/users/ann/recall", q); ts.append(time.perf_counter() - t)
        assert s == 200
    ts.sort()
    res.setdefault(mb, []).append((statistics.median(ts) * 1000, ts[int(len(ts) * 0.95)] * 1000))
    _, m = req(c, "GET", "/metrics")
    hits = re.search(rb"membank_query_cache_hits_total (\d+)", m)
    print(f"round {rnd} cache {mb} MiB: p50 {res[mb][-1][0]:.2f} ms, p95 {res[mb][-1][1]:.2f} ms, hits {hits.group(1).decode() if hits else '-'}", flush=True)
    p.terminate(); p.wait()
import shutil
shutil.rmtree(d, ignore_errors=True)
