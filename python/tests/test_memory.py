"""``Memory`` itself: the issue's example as written, opening errors, closing, threads
and PostgreSQL."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import List, Tuple

import pytest

import membank
from harness import pg_url


def test_the_issue_example_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    m = membank.Memory(db="x.db")
    m.remember(user="ann", user_text="My cat is Miso")
    assert "Miso" in (m.recall(user="ann", query="cat's name")[0].content or "")
    assert (tmp_path / "x.db").is_file()
    m.close()


def test_settings_that_cannot_work_raise_the_documented_exception(tmp_path: Path) -> None:
    with pytest.raises(membank.NotFound, match="no directory"):
        membank.Memory(db=tmp_path / "no-such-dir" / "x.db")
    with pytest.raises(membank.InvalidInput):
        membank.Memory(db="")
    with pytest.raises(membank.InvalidInput, match="forgetting"):
        membank.Memory(db=tmp_path / "a.db", forgetting_policy="never-forget")
    with pytest.raises(membank.InvalidInput):
        membank.Memory(db=tmp_path / "b.db", local_model="gpt-17")
    with pytest.raises(membank.NotFound):
        membank.Memory(db=tmp_path / "c.db", config=tmp_path / "missing.toml")
    empty = tmp_path / "empty-models"
    empty.mkdir()
    with pytest.raises(membank.Unavailable, match="empty-models"):
        membank.Memory(db=tmp_path / "d.db", model_dir=empty)
    with pytest.raises(membank.Unavailable):
        membank.Memory(db="postgres://nobody@127.0.0.1:1/nothing")


def test_a_config_file_and_the_fademem_policy_are_read(tmp_path: Path) -> None:
    config = tmp_path / "membank.toml"
    config.write_text('[forgetting]\npolicy = "fademem"\n', encoding="utf-8")
    with membank.Memory(db=tmp_path / "f.db", config=config) as m:
        m.remember("ann", "I play the cello")
        assert m.maintain("ann", dry_run=True).policy == "fademem"
    with membank.Memory(db=tmp_path / "g.db", forgetting_policy="fademem") as m:
        m.remember("ann", "I play the cello")
        assert m.sweep("ann", dry_run=True).examined == 1
        assert m.maintain("ann", dry_run=True).policy == "fademem"


def test_a_closed_memory_raises_unavailable(tmp_path: Path) -> None:
    m = membank.Memory(db=tmp_path / "x.db")
    id = m.remember("ann", "something")
    assert not m.closed
    m.close()
    m.close()
    assert m.closed and "closed" in repr(m)
    with pytest.raises(membank.Unavailable, match="closed"):
        m.get("ann", id)
    # The file is free again: another Memory opens it and finds what was stored.
    with membank.Memory(db=tmp_path / "x.db") as again:
        assert again.get("ann", id).content is not None


def test_threads_recall_while_one_writes(tmp_path: Path) -> None:
    """One Memory shared by four threads: a writer and three readers. Every call succeeds,
    every write is there at the end, and calls from different threads ran at the same
    time, which they could not if the GIL were held during engine calls."""
    m = membank.Memory(db=tmp_path / "threads.db")
    seeded = [m.remember("ann", f"seed fact {i}: I collect stamps from country {i}") for i in range(10)]
    spans: List[Tuple[float, float]] = []
    errors: List[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(4)

    def timed(call: "object") -> None:
        began = time.perf_counter()
        assert callable(call)
        call()
        ended = time.perf_counter()
        with lock:
            spans.append((began, ended))

    written: List[str] = []

    def writer() -> None:
        try:
            start.wait()
            for i in range(20):
                timed(lambda i=i: written.append(m.remember("ann", f"new fact {i}: my favourite number is {i}")))
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    def reader() -> None:
        try:
            start.wait()
            for _ in range(20):
                timed(lambda: m.recall("ann", "which stamps do I collect", k=3, strengthen=False))
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert errors == []
    assert len(written) == 20 and len(set(written)) == 20
    assert m.list("ann", limit=100).counts.active == len(seeded) + 20
    spans.sort()
    overlapping = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1])
    assert overlapping > 0, "no two calls ever ran at once: the GIL was held"
    m.close()


@pytest.mark.skipif(
    pg_url() is None and os.environ.get("MEMBANK_REQUIRE_PG") != "1",
    reason="MEMBANK_TEST_PG_URL names no PostgreSQL (scripts/postgres-dev.sh starts one)",
)
def test_postgres(tmp_path: Path) -> None:
    url = pg_url()
    assert url is not None, "MEMBANK_REQUIRE_PG=1 but MEMBANK_TEST_PG_URL is not set"
    with membank.Memory(db=url) as m:
        assert "://" in m.db
        user = f"py-{os.getpid()}-{time.time_ns()}"
        id = m.remember(user, "My cat is Miso")
        assert [h.id for h in m.recall(user, "cat's name")][:1] == [id]
        assert m.erase(user, id).status == "erased"


def test_fetch_model_keeps_a_model_that_is_there(tmp_path: Path) -> None:
    # The default model is on this machine (the suite needs it): nothing is downloaded.
    path = membank.fetch_model()
    assert (path / "model.safetensors").is_file() and path.name == "all-MiniLM-L6-v2"
    with pytest.raises(membank.InvalidInput):
        membank.fetch_model("gpt-17")
