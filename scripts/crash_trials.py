#!/usr/bin/env python3
"""Crash trials: a mixed workload against a real `membank serve`, killed with SIGKILL at a
random moment, then restarted and checked.

Each trial starts `membank serve` (loopback, no auth, no rate limit) on the same database
file, runs a few client threads that write and read over REST (turns, batches, notes,
strengthening recalls, sweeps, maintenance cycles, erasures) while another thread imports
MemoryBank JSON files through the CLI into the same file, and kills the server (and any
import still running) with SIGKILL after a random delay. It then restarts the server and
checks, for every trial so far:

- lost: every acknowledged write is there. A 201'd turn or note exists with its text (or
  is erased, if we erased it); an acknowledged erase is erased; every turn of an
  acknowledged batch and every record of an import that exited 0 exists; an acknowledged
  recall's strengthening (its `recall_count`) was kept; what an acknowledged sweep archived
  is not active.
- half-present: a batch or an import whose answer never came is entirely present or
  entirely absent; every event names a memory that exists; every memory has its `created`
  event; `membank --db FILE check` passes (it covers orphan and missing vectors and index
  rows).

What it does not do: it never retries, so it says nothing about idempotency; it kills a
process, not the machine (the page cache survives, so it tests the transactions, not the
fsyncs).

Usage: crash_trials.py N [--seed S] [--bin PATH] [--dir DIR] [--threads T]
The last line on stdout is exactly `N trials, K acknowledged writes, L lost`; problems of
any kind are listed on stderr with the seed and trial that showed them, and the exit
status is non-zero if anything was lost or half-present.
"""

import argparse
from http.client import HTTPException
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import date, datetime, timedelta, timezone

USERS = ["ann", "ben", "cho"]
WORDS = ("cat tea paris guitar birthday rain garden chess river violin pasta lantern "
         "mountain bicycle novel coffee winter harbour tulip museum piano sailing "
         "dumpling marathon telescope bakery jazz orchard festival kayak").split()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Http:
    """One keep-alive-free client: a fresh connection per request, so a kill lands on
    whatever is in flight and nothing is reused across a restart."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        # urllib sends Host: 127.0.0.1:PORT, which the loopback no-auth mode expects.
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                return resp.status, (decode(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, None
        except (OSError, HTTPException, ValueError):
            # Refused, reset, timed out, a truncated body: no answer, so unacknowledged.
            return None


def decode(raw):
    """A JSON body, or a membank-export (JSON Lines) read into {"memories", "events"}.
    An export without its end line was cut short: that is no answer (ValueError)."""
    try:
        return json.loads(raw)
    except ValueError:
        lines = [json.loads(line) for line in raw.decode().splitlines() if line]
        if not lines or lines[0].get("format") != "membank-export" or lines[-1].get("type") != "end":
            raise
        return {
            "memories": [l for l in lines if l.get("type") == "memory"],
            "events": [l for l in lines if l.get("type") == "event"],
        }


class Model:
    """What the clients were told, across all trials of one run."""

    def __init__(self):
        self.lock = threading.Lock()
        # id -> {"user", "token", "erase": None | "acked" | "unknown"}
        self.memories = {}
        # Writes whose answer never came, each a list of (user, token); all or nothing.
        self.unknown_groups = []  # {"what", "trial", "items": [(user, token)], "single": bool}
        # Acknowledged imports: (user, token) that must exist, id unknown.
        self.acked_tokens = []  # (user, token, trial)
        self.recall_counts = {}  # id -> highest acknowledged recall_count
        self.archived = set()  # ids an acknowledged sweep archived
        self.acked_writes = 0
        self.counts = {"turn": 0, "note": 0, "batch_turn": 0, "import_record": 0, "erase": 0, "recall": 0, "sweep": 0, "maintain": 0, "errors_5xx": 0, "unanswered": 0, "imports_killed": 0}
        self.unanswered_by_op = {}

    def erasable(self, rng, user):
        with self.lock:
            ids = [i for i, m in self.memories.items() if m["user"] == user and m["erase"] is None]
            if not ids:
                return None
            mid = rng.choice(ids)
            self.memories[mid]["erase"] = "unknown"
            return mid


class Trial:
    def __init__(self, args, model, trial, seed):
        self.args, self.model, self.trial, self.seed = args, model, trial, seed
        self.stop = threading.Event()
        self.imports = []  # running import processes
        self.imports_lock = threading.Lock()
        self.seq = 0
        self.seq_lock = threading.Lock()

    def token(self):
        with self.seq_lock:
            self.seq += 1
            return f"s{self.seed}t{self.trial}w{self.seq}"

    def sentence(self, rng, token):
        return f"{token} {' '.join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))}"

    @staticmethod
    def past(rng):
        """A time up to 90 days back: old enough for sweeps to archive some."""
        return (datetime.now(timezone.utc) - timedelta(days=rng.uniform(0, 90))).strftime("%Y-%m-%dT%H:%M:%SZ")

    def client(self, http, rng):
        m = self.model
        while not self.stop.is_set():
            user = rng.choice(USERS)
            op = rng.choices(["turn", "note", "batch", "recall", "erase", "sweep", "maintain"], [30, 12, 18, 25, 7, 4, 4])[0]
            if op in ("turn", "note"):
                tok = self.token()
                text = self.sentence(rng, tok)
                if op == "turn":
                    body = {"user_text": text, "assistant_text": f"noted {rng.choice(WORDS)}", "occurred_at": self.past(rng), "clock_from": "event"}
                    path = f"/v1/users/{user}/turns"
                else:
                    body = {"text": text}
                    path = f"/v1/users/{user}/notes"
                res = http.call("POST", path, body)
                with m.lock:
                    if res and res[0] == 201:
                        m.memories[res[1]["id"]] = {"user": user, "token": tok, "erase": None}
                        m.counts[op] += 1
                        m.acked_writes += 1
                    else:
                        self.unacked(res, op, [(user, tok)])
            elif op == "batch":
                toks = [self.token() for _ in range(rng.randint(2, 20))]
                body = {"turns": [{"user_text": self.sentence(rng, t), "assistant_text": "ok", "occurred_at": self.past(rng), "clock_from": "event"} for t in toks]}
                res = http.call("POST", f"/v1/users/{user}/turns/batch", body)
                with m.lock:
                    if res and res[0] == 201:
                        ids = [x["id"] for x in res[1]["memories"]]
                        if len(ids) != len(toks):
                            log(f"BATCH ANSWER: {len(ids)} ids for {len(toks)} turns (seed {self.seed} trial {self.trial})")
                        for mid, t in zip(ids, toks):
                            m.memories[mid] = {"user": user, "token": t, "erase": None}
                        m.counts["batch_turn"] += len(toks)
                        m.acked_writes += len(toks)
                    else:
                        self.unacked(res, "batch", [(user, t) for t in toks])
            elif op == "recall":
                res = http.call("POST", f"/v1/users/{user}/recall", {"query": " ".join(rng.choice(WORDS) for _ in range(3)), "k": 5})
                if res and res[0] == 200:
                    with m.lock:
                        if res[1].get("strengthened"):
                            m.counts["recall"] += 1
                            m.acked_writes += 1
                            for hit in res[1]["results"]:
                                m.recall_counts[hit["id"]] = max(m.recall_counts.get(hit["id"], 0), hit["recall_count"])
                else:
                    with m.lock:
                        self.unacked(res, "recall", [])
            elif op == "erase":
                mid = m.erasable(rng, user)
                if mid is None:
                    continue
                res = http.call("DELETE", f"/v1/users/{user}/memories/{mid}")
                with m.lock:
                    if res and res[0] == 200:
                        m.memories[mid]["erase"] = "acked"
                        m.counts["erase"] += 1
                        m.acked_writes += 1
                    else:
                        self.unacked(res, "erase", [])
            elif op == "sweep":
                # Turns are dated up to 90 days back with their clocks from those dates, so
                # a sweep now really archives (a sweep may not run ahead of the server's clock).
                body = {} if rng.random() < 0.5 else {"max_archive_fraction": 0.3}
                res = http.call("POST", f"/v1/users/{user}/sweep", body)
                with m.lock:
                    if res and res[0] == 200:
                        m.counts["sweep"] += 1
                        m.archived.update(a["id"] for a in res[1]["archived"])
                    else:
                        self.unacked(res, "sweep", [])
            else:
                res = http.call("POST", f"/v1/users/{user}/maintain", {})
                with m.lock:
                    if res and res[0] == 200:
                        m.counts["maintain"] += 1
                    else:
                        self.unacked(res, "maintain", [])

    def unacked(self, res, what, items):
        """Called with the model's lock held."""
        m = self.model
        if res is not None and res[0] < 500:
            # An answered refusal: nothing may have been stored.
            if items:
                m.unknown_groups.append({"what": f"{what} refused {res[0]}", "trial": self.trial, "items": items, "refused": True})
            if not self.stop.is_set():
                log(f"  unexpected {res[0]} on {what}: {json.dumps(res[1])[:200]}")
            return
        if res is not None:
            m.counts["errors_5xx"] += 1
            log(f"  {res[0]} on {what}: {json.dumps(res[1])[:200]}")
        else:
            m.counts["unanswered"] += 1
            m.unanswered_by_op[what] = m.unanswered_by_op.get(what, 0) + 1
        if items:
            m.unknown_groups.append({"what": what, "trial": self.trial, "items": items, "refused": False})

    def importer(self, rng, workdir):
        """Imports small MemoryBank files through the CLI into the same database file."""
        m = self.model
        n = 0
        while not self.stop.is_set():
            n += 1
            user = rng.choice(USERS)
            # A day of its own per import: import keys are (user, date, index), so a reused
            # day would be skipped as already imported.
            # (The database is new for each run, and past days only: the future is refused.)
            day = (date(1990, 1, 1) + timedelta(days=self.trial * 40 + n)).isoformat()
            toks = [self.token() for _ in range(rng.randint(2, 12))]
            doc = {user: {"history": {day: [{"query": self.sentence(rng, t), "response": "I see"} for t in toks]}}}
            path = os.path.join(workdir, f"import-{self.trial}-{n}.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            with self.imports_lock:
                if self.stop.is_set():
                    return
                proc = subprocess.Popen([self.args.bin, "--db", self.args.db, "import", "memorybank", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                self.imports.append(proc)
            _, err = proc.communicate()
            with m.lock:
                if proc.returncode == 0:
                    m.acked_tokens.extend((user, t, self.trial) for t in toks)
                    m.counts["import_record"] += len(toks)
                    m.acked_writes += len(toks)
                else:
                    if proc.returncode == -signal.SIGKILL:
                        m.counts["imports_killed"] += 1
                    else:
                        log(f"  import exited {proc.returncode}: {err.decode(errors='replace').strip()[:300]}")
                    m.unknown_groups.append({"what": "import", "trial": self.trial, "items": [(user, t) for t in toks], "refused": False})
            if rng.random() < 0.5:
                self.stop.wait(rng.uniform(0.0, 0.5))

    def kill_imports(self):
        with self.imports_lock:
            for proc in self.imports:
                if proc.poll() is None:
                    proc.kill()


def start_server(args, port, logfile):
    cmd = [args.bin, "--db", args.db, "serve", "--addr", f"127.0.0.1:{port}", "--rate-limit", "0"]
    proc = subprocess.Popen(cmd, stdout=logfile, stderr=logfile)
    http = Http(port)
    deadline = time.time() + args.ready_timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited {proc.returncode} at start; see {logfile.name}")
        res = http.call("GET", "/readyz", timeout=5)
        if res and res[0] == 200:
            return proc, http
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"serve not ready after {args.ready_timeout} s; see {logfile.name}")


def answered(http, method, path):
    res = http.call(method, path, timeout=120)
    if res is None:
        raise RuntimeError(f"{method} {path}: no answer from the restarted server")
    if res[0] != 200:
        raise RuntimeError(f"{method} {path}: {res[0]} {res[1]}")
    return res[1]


def verify(http, model, seed, trial):
    """Checks everything the model knows against the restarted server; returns
    (lost, half_present) lists of problem descriptions. Resolves what was unknown."""
    lost, half = [], []
    by_id, by_token, events = {}, {}, {}
    for user in USERS:
        export = answered(http, "GET", f"/v1/users/{user}/export")
        for mem in export["memories"]:
            by_id[mem["id"]] = (user, mem)
            text = mem.get("user_text") or mem.get("content") or ""
            tok = text.split(" ", 1)[0]
            if tok.startswith("s"):
                by_token[(user, tok)] = mem
        evs, after = [], None
        while True:
            page = answered(http, "GET", f"/v1/users/{user}/events?limit=10000" + (f"&after={after}" if after is not None else ""))["events"]
            evs.extend(page)
            if len(page) < 10000:
                break
            after = page[-1]["seq"]
        events[user] = evs
    # A recall that reminisces brings an archived memory back, logged as `reminisced` after
    # the `archived` event; such a recall may have committed without its answer arriving.
    last = {}
    for evs in events.values():
        for ev in evs:
            if ev.get("memory_id") and ev["kind"] in ("archived", "reminisced"):
                last[(ev["memory_id"], ev["kind"])] = ev["seq"]

    def brought_back(mid):
        return last.get((mid, "reminisced"), -1) > last.get((mid, "archived"), -1)

    where = f"seed {seed} trial {trial}"
    m = model
    with m.lock:
        for mid, rec in m.memories.items():
            got = by_id.get(mid)
            if got is None or got[0] != rec["user"]:
                lost.append(f"{where}: acknowledged memory {mid} ({rec['token']}) of {rec['user']} is missing")
                continue
            mem = got[1]
            if rec["erase"] == "acked":
                if mem["status"] != "erased" or mem.get("content") is not None:
                    lost.append(f"{where}: acknowledged erase of {mid} is not erased (status {mem['status']})")
            elif mem["status"] == "erased":
                if rec["erase"] == "unknown":
                    rec["erase"] = "acked"  # the unanswered erase happened; from now on it must stay
                else:
                    lost.append(f"{where}: {mid} ({rec['token']}) is erased but was never erased by us")
            else:
                if rec["erase"] == "unknown":
                    rec["erase"] = None  # it did not happen
                text = mem.get("user_text") or mem.get("content") or ""
                if not text.startswith(rec["token"] + " "):
                    lost.append(f"{where}: {mid} lost its text: {text[:80]!r} instead of {rec['token']}…")
            if mid in m.recall_counts and mem["status"] != "erased" and mem["recall_count"] < m.recall_counts[mid]:
                lost.append(f"{where}: {mid} has recall_count {mem['recall_count']} < acknowledged {m.recall_counts[mid]}")
            if mid in m.archived and mem["status"] == "active" and not brought_back(mid):
                lost.append(f"{where}: {mid} archived by an acknowledged sweep is active again")
        for user, tok, t in m.acked_tokens:
            if (user, tok) not in by_token:
                lost.append(f"{where}: record {tok} of an acknowledged import (trial {t}) is missing")
        for group in m.unknown_groups:
            present = [(u, t) for u, t in group["items"] if (u, t) in by_token]
            if group["refused"]:
                if present:
                    half.append(f"{where}: {group['what']} (trial {group['trial']}) was refused but {len(present)} of {len(group['items'])} turns were stored, e.g. {present[0][1]}")
            elif present and len(present) != len(group["items"]):
                half.append(f"{where}: unanswered {group['what']} (trial {group['trial']}) is half-present: {len(present)} of {len(group['items'])} stored, first missing {next(t for u, t in group['items'] if (u, t) not in by_token)}")
            elif present and group["what"] != "import":
                # It happened in full: from now on it is as good as acknowledged.
                for u, t in group["items"]:
                    mem = by_token[(u, t)]
                    m.memories[mem["id"]] = {"user": u, "token": t, "erase": "acked" if mem["status"] == "erased" else None}
            elif present:
                m.acked_tokens.extend((u, t, group["trial"]) for u, t in group["items"])
        # Each unanswered write is now settled one way or the other, for good: nothing retries.
        m.unknown_groups = []
        # Events: every event names a memory of its user that exists; every memory has its `created` event.
        for user in USERS:
            created = set()
            for ev in events[user]:
                mid = ev.get("memory_id")
                if mid is None:
                    continue
                if mid not in by_id or by_id[mid][0] != user:
                    half.append(f"{where}: event {ev['seq']} ({ev['kind']}) of {user} names {mid}, which {user} does not have")
                if ev["kind"] == "created":
                    created.add(mid)
            for mid, (u, mem) in by_id.items():
                if u == user and mid not in created:
                    half.append(f"{where}: memory {mid} of {user} has no created event")
    # A single turn or note that was never answered may be present or absent: nothing to check.
    return lost, half


def db_check(db, where):
    """What `membank check` does not look at, read straight from the file (read-only, with
    the server stopped): a live memory without its vector, an erased one that kept text."""
    problems = []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for seq, mid, status in conn.execute("SELECT m.seq, m.id, m.status FROM memories m LEFT JOIN embeddings e ON e.memory_seq = m.seq WHERE e.memory_seq IS NULL AND m.status != 'erased'"):
            problems.append(f"{where}: memory {mid} ({status}) has no vector")
        for (mid,) in conn.execute("SELECT id FROM memories WHERE status = 'erased' AND (content IS NOT NULL OR user_text IS NOT NULL OR assistant_text IS NOT NULL)"):
            problems.append(f"{where}: erased memory {mid} still has text")
    finally:
        conn.close()
    return problems


def run(args):
    seed = args.seed
    master = random.Random(seed)
    model = Model()
    lost_all, half_all = [], []
    port = free_port()
    started = time.time()
    for trial in range(1, args.trials + 1):
        t0 = time.time()
        trial_rng = random.Random(master.getrandbits(64))
        logpath = os.path.join(args.workdir, f"serve-{trial}.log")
        with open(logpath, "w") as logfile:
            proc, http = start_server(args, port, logfile)
            tr = Trial(args, model, trial, seed)
            threads = [threading.Thread(target=tr.client, args=(http, random.Random(trial_rng.getrandbits(64))), daemon=True) for _ in range(args.threads)]
            if trial_rng.random() < args.import_share:
                threads.append(threading.Thread(target=tr.importer, args=(random.Random(trial_rng.getrandbits(64)), args.workdir), daemon=True))
            for th in threads:
                th.start()
            delay = trial_rng.uniform(args.min_run, args.max_run)
            time.sleep(delay)
            tr.stop.set()
            os.kill(proc.pid, signal.SIGKILL)
            tr.kill_imports()
            proc.wait()
            for th in threads:
                th.join(timeout=120)
                if th.is_alive():
                    raise RuntimeError("a client thread did not finish after the kill")
            tr.kill_imports()
        with open(os.path.join(args.workdir, f"restart-{trial}.log"), "w") as logfile:
            proc, http = start_server(args, port, logfile)
            try:
                lost, half = verify(http, model, seed, trial)
            finally:
                proc.terminate()  # SIGTERM: graceful stop
                proc.wait(timeout=60)
        half += db_check(args.db, f"seed {seed} trial {trial}")
        check = subprocess.run([args.bin, "--db", args.db, "check"], capture_output=True, text=True)
        if check.returncode != 0:
            half.append(f"seed {seed} trial {trial}: membank check failed ({check.returncode}): {(check.stdout + check.stderr).strip()[:500]}")
        for p in lost + half:
            log("  " + p)
        lost_all += lost
        half_all += half
        log(f"trial {trial}/{args.trials}: killed after {delay:.2f} s, {model.acked_writes} acknowledged writes so far, {len(lost)} lost, {len(half)} half-present ({time.time() - t0:.1f} s)")
    c = model.counts
    log(f"acknowledged: {c['turn']} turns, {c['note']} notes, {c['batch_turn']} batch turns, {c['import_record']} imported records, {c['erase']} erasures, {c['recall']} strengthening recalls; "
        f"{c['sweep']} sweeps, {c['maintain']} maintenance cycles; unanswered requests {c['unanswered']} {json.dumps(model.unanswered_by_op, sort_keys=True)}, "
        f"imports killed {c['imports_killed']}, 5xx {c['errors_5xx']}; "
        f"{len(half_all)} half-present; seed {seed}; {time.time() - started:.0f} s")
    lost_n = len(lost_all)
    print(f"{args.trials} trials, {model.acked_writes} acknowledged writes, {lost_n} lost", flush=True)
    return 1 if lost_n or half_all else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trials", type=int)
    p.add_argument("--seed", type=int, default=None, help="default: random (printed)")
    p.add_argument("--bin", default=os.environ.get("MEMBANK_BIN"), help="membank binary (default: $MEMBANK_BIN)")
    p.add_argument("--dir", default=None, help="work directory to keep (default: a temporary one, removed on success)")
    p.add_argument("--threads", type=int, default=4, help="client threads")
    p.add_argument("--min-run", type=float, default=0.2, help="shortest time before the kill, in seconds")
    p.add_argument("--max-run", type=float, default=3.0, help="longest time before the kill, in seconds")
    p.add_argument("--import-share", type=float, default=0.5, help="share of trials that also import through the CLI")
    p.add_argument("--ready-timeout", type=float, default=120.0)
    args = p.parse_args()
    if not args.bin:
        p.error("give --bin or MEMBANK_BIN")
    if args.seed is None:
        args.seed = random.randrange(1, 1 << 31)
    args.workdir = args.dir or tempfile.mkdtemp(prefix="membank-crash-")
    os.makedirs(args.workdir, exist_ok=True)
    args.db = os.path.join(args.workdir, "crash.db")
    # A new database each run: the model of what was acknowledged starts empty too.
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(args.db + suffix):
            os.remove(args.db + suffix)
    log(f"crash trials: {args.trials} trials, seed {args.seed}, {args.threads} client threads, binary {args.bin}, work dir {args.workdir}")
    code = run(args)
    if code == 0 and not args.dir:
        shutil.rmtree(args.workdir, ignore_errors=True)
    elif code != 0:
        log(f"kept {args.workdir} (database and server logs); rerun with --seed {args.seed}")
    sys.exit(code)


if __name__ == "__main__":
    main()
