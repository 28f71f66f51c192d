"""One behaviour suite, run against ``Memory`` (in process), ``Client`` and
``AsyncClient`` (a real ``membank serve`` on loopback): the same calls must give the same
results and raise the same exceptions whichever is used."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, List

import pytest

import membank
from membank._api import SyncApi


def test_the_issue_example_recalls_what_was_said(api: SyncApi, user: str) -> None:
    api.remember(user=user, user_text="My cat is Miso")
    hits = api.recall(user=user, query="cat's name")
    assert isinstance(hits[0], membank.Hit)
    assert "Miso" in (hits[0].content or "")
    assert hits.strengthened and hits.user_known
    assert hits[0].recall_count == 1, "the recall strengthened what it returned"


def test_a_turn_keeps_both_sides_and_its_fields(api: SyncApi, user: str) -> None:
    id = api.remember(user, "I moved to Lisbon in March", "Lisbon is lovely in spring", importance=0.9)
    memory = api.get(user, id)
    assert isinstance(memory, membank.MemoryWithRetention)
    assert (memory.id, memory.kind, memory.source, memory.user, memory.status) == (id, "turn", "user", user, "active")
    assert memory.user_text == "I moved to Lisbon in March"
    assert memory.assistant_text == "Lisbon is lovely in spring"
    assert "Lisbon" in (memory.content or "")
    assert memory.base_importance == pytest.approx(0.9)
    assert memory.metadata["importance_source"] == "explicit"
    assert memory.occurred_at.tzinfo is not None and 0.0 < memory.retention <= 1.0
    assert memory.recall_count == 0 and not memory.pinned and memory.past_threshold is False


def test_a_note_keeps_its_source_labels_and_metadata(api: SyncApi, user: str) -> None:
    id = api.note(user, "Ann is allergic to peanuts", source="user", session="s1", metadata={"topic": "health"})
    memory = api.get(user, id)
    assert (memory.kind, memory.source, memory.session, memory.agent) == ("note", "user", "s1", None)
    assert memory.metadata["topic"] == "health"
    hits = api.recall(user, "what is Ann allergic to", kind="note")
    assert [h.id for h in hits] == [id]


def test_at_takes_a_datetime_a_date_or_a_string(api: SyncApi, user: str) -> None:
    instant = datetime(2024, 5, 4, 10, 30, tzinfo=timezone.utc)
    by_datetime = api.get(user, api.remember(user, "we hiked Sintra", at=instant))
    assert by_datetime.occurred_at == instant and by_datetime.day == "2024-05-04"
    by_string = api.get(user, api.remember(user, "we swam at Cascais", at="2024-05-05T08:00:00Z"))
    assert by_string.occurred_at == datetime(2024, 5, 5, 8, tzinfo=timezone.utc)
    by_date = api.get(user, api.note(user, "the dentist visit", at=date(2024, 5, 6)))
    assert by_date.day == "2024-05-06"
    naive = datetime(2024, 5, 7, 12, 0)
    by_naive = api.get(user, api.remember(user, "a naive time is local", at=naive))
    assert by_naive.occurred_at == naive.astimezone()
    with pytest.raises(membank.InvalidInput):
        api.remember(user, "when?", at="the fifth of May")
    with pytest.raises(membank.InvalidInput):
        api.remember(user, "too late", at=datetime.now(timezone.utc) + timedelta(days=30))


def test_recall_filters_by_day_and_can_only_look(api: SyncApi, user: str) -> None:
    old = api.remember(user, "I bought a red bicycle", at="2024-01-10T10:00:00Z")
    new = api.remember(user, "I sold the red bicycle", at="2024-03-10T10:00:00Z")
    hits = api.recall(user, "red bicycle", date_from=date(2024, 3, 1), date_to="2024-03-31", strengthen=False)
    assert [h.id for h in hits] == [new]
    assert hits.date_filter is not None and hits.date_filter.mode == "filter"
    assert hits.date_filter.date_from == "2024-03-01"
    assert not hits.strengthened
    assert api.get(user, new).recall_count == 0, "a recall with strengthen=False changes nothing"
    both = api.recall(user, "red bicycle", k=1)
    assert len(both) == 1 and both[0].id in (old, new)


def test_list_pages_and_counts(api: SyncApi, user: str) -> None:
    ids = [api.note(user, f"fact number {i} about tea") for i in range(3)]
    page = api.list(user, limit=2)
    assert isinstance(page, membank.MemoryList) and len(page) == 2
    assert page.counts == membank.Counts(active=3, archived=0, superseded=0, erased=0)
    assert page[0].id == ids[-1], "newest first"
    rest = api.list(user, limit=2, offset=2)
    assert [m.id for m in rest] == [ids[0]]
    assert [m.id for m in api.list(user, oldest_first=True)] == ids
    assert api.list(user, status="archived") == []
    assert not api.list("nobody-" + user).user_known


def test_forget_restore_pin_unpin_erase(api: SyncApi, user: str) -> None:
    id = api.remember(user, "my locker code is 4711")
    assert api.forget(user, id, reason="asked to").status == "archived"
    assert id not in [h.id for h in api.recall(user, "locker code", reminisce="never")]
    assert [m.id for m in api.list(user, status=["archived"])] == [id]
    with pytest.raises(membank.Conflict):
        api.forget(user, id)
    assert api.restore(user, id).status == "active"
    with pytest.raises(membank.Conflict):
        api.restore(user, id)
    assert api.pin(user, id).pinned
    assert not api.unpin(user, id).pinned
    tombstone = api.erase(user, id)
    assert isinstance(tombstone, membank.MemoryRecord)
    assert (tombstone.status, tombstone.content, tombstone.user_text) == ("erased", None, None)
    assert api.get(user, id).content is None
    assert id not in [h.id for h in api.recall(user, "locker code 4711", reminisce="always")]


def test_sweep_and_maintain_report(api: SyncApi, user: str) -> None:
    id = api.remember(user, "an old remark about the weather", at="2020-01-01T00:00:00Z", clock_from="event")
    dry = api.sweep(user, dry_run=True)
    assert isinstance(dry, membank.SweepReport) and dry.dry_run
    assert [a.id for a in dry.archived] == [id]
    assert dry.archived[0].retention < 0.05 and dry.archived[0].mode == "threshold"
    assert api.get(user, id).status == "active", "a dry run changes nothing"
    report = api.maintain(user)
    assert isinstance(report, membank.MaintainReport)
    assert (report.user, report.dry_run, report.policy, report.archived) == (user, False, "memorybank", 1)
    assert [a.id for a in report.archived_memories] == [id]
    assert api.get(user, id).status == "archived"
    assert api.sweep(user).examined == 0


def test_events_are_the_log_of_what_happened(api: SyncApi, user: str) -> None:
    first = api.remember(user, "I like green tea")
    second = api.note(user, "prefers tea to coffee")
    api.recall(user, "tea", k=2)
    api.pin(user, first)
    events = api.events(user)
    assert all(isinstance(e, membank.Event) for e in events)
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    kinds = [e.kind for e in events if e.memory_id == first]
    assert kinds[0] == "created" and "recalled" in kinds and "pinned" in kinds
    only_second = api.events(user, memory_id=second)
    assert {e.memory_id for e in only_second} == {second}
    assert api.events(user, after=events[-1].seq) == []
    assert len(api.events(user, limit=1)) == 1


def test_export_writes_the_whole_user(api: SyncApi, user: str, tmp_path: Path) -> None:
    api.remember(user, "my sister is called Eva")
    api.note(user, "Eva lives in Porto")
    summary = api.export(user, tmp_path / "out.jsonl")
    assert (summary.users, summary.memories) == (1, 2) and summary.events >= 2
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines[0]["format"] == "membank-export" and lines[-1]["type"] == "end"
    assert "Eva lives in Porto" in (tmp_path / "out.jsonl").read_text(encoding="utf-8")


# --- bad input: the documented exception, never a crash or a hang ---------------------


Call = Callable[[SyncApi, str], object]

BLANK_USER_CALLS: List[Call] = [
    lambda api, u: api.remember(u, "hello"),
    lambda api, u: api.note(u, "hello"),
    lambda api, u: api.recall(u, "hello"),
    lambda api, u: api.list(u),
    lambda api, u: api.get(u, "01a242b7-ebb4-73f2-90c1-0cfd42a967fa"),
    lambda api, u: api.forget(u, "01a242b7-ebb4-73f2-90c1-0cfd42a967fa"),
    lambda api, u: api.sweep(u),
    lambda api, u: api.maintain(u),
    lambda api, u: api.events(u),
]


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
@pytest.mark.parametrize("call", BLANK_USER_CALLS)
def test_a_blank_user_is_invalid_input(api: SyncApi, blank: str, call: Call) -> None:
    with pytest.raises(membank.InvalidInput) as caught:
        call(api, blank)
    assert caught.value.code == "invalid_input"
    assert "user" in caught.value.message


@pytest.mark.parametrize("k", [0, -1, 201])
def test_k_out_of_range_is_invalid_input(api: SyncApi, user: str, k: int) -> None:
    api.remember(user, "something to find")
    with pytest.raises(membank.InvalidInput, match="k: must be between 1 and 200" if k >= 0 else "u32"):
        api.recall(user, "something", k=k)


def test_blank_and_oversized_texts_are_refused(api: SyncApi, user: str) -> None:
    for blank in ["", "   "]:
        with pytest.raises(membank.InvalidInput):
            api.remember(user, blank)
        with pytest.raises(membank.InvalidInput):
            api.recall(user, blank)
    with pytest.raises(membank.InvalidInput, match="32768"):
        api.remember(user, "x" * 40_000)
    with pytest.raises(membank.InvalidInput, match="32768"):
        api.recall(user, "é" * 20_000)
    # Over the request body's limit (1 MiB): refused before it is read.
    with pytest.raises(membank.PayloadTooLarge):
        api.note(user, "y" * (2 << 20))
    assert api.list(user).counts.active == 0, "nothing was stored"


def test_hostile_strings(api: SyncApi, user: str) -> None:
    # Bidi overrides, zero-width and combining characters, emoji, quotes and markup are
    # stored and returned exactly.
    tricky = "\u202eevil\u202c \u200b zero-width, e\u0301, 🐈 \"quotes\" <b>&amp;</b> '; DROP TABLE memories; --"
    id = api.remember(user, tricky)
    assert api.get(user, id).user_text == tricky
    assert id in [h.id for h in api.recall(user, tricky)]
    # A user name with a bidi override or a slash is a name like any other, path-encoded.
    for name in [user + "\u202e", user + "/x", user + "?q=1#f", user + "%2F..%2F"]:
        stored = api.get(name, api.note(name, "a note"))
        assert stored.user == name
        assert [m.user for m in api.list(name)] == [name]
    # Control characters in a user and NUL in a text are refused.
    for bad_user in [user + "\x00", user + "\x1b[31m", user + "\nx"]:
        with pytest.raises(membank.InvalidInput):
            api.note(bad_user, "a note")
    with pytest.raises(membank.InvalidInput):
        api.remember(user, "nul \x00 inside")
    # A lone surrogate has no UTF-8: refused before anything is sent.
    with pytest.raises(membank.InvalidInput, match="surrogate"):
        api.remember(user, "broken \ud800 text")
    with pytest.raises(membank.InvalidInput, match="surrogate"):
        api.recall(user + "\udfff", "x")


def test_unknown_ids_are_not_found(api: SyncApi, user: str) -> None:
    mine = api.remember(user, "my own memory")
    other = api.remember("other-" + user, "someone else's memory")
    for bad in ["01a242b7-ebb4-73f2-90c1-0cfd42a967fa", "not-an-id", "", "  ", "../../etc/passwd", "x/pin", other]:
        with pytest.raises(membank.NotFound):
            api.get(user, bad)
        with pytest.raises(membank.NotFound):
            api.forget(user, bad)
        with pytest.raises(membank.NotFound):
            api.erase(user, bad)
    assert api.get(user, mine).id == mine
    assert api.get("other-" + user, other).status == "active", "another user's id was not touched"


def test_unknown_names_are_invalid_input(api: SyncApi, user: str) -> None:
    api.remember(user, "anything")
    with pytest.raises(membank.InvalidInput):
        api.recall(user, "anything", reminisce="sometimes")
    with pytest.raises(membank.InvalidInput):
        api.recall(user, "anything", kind="poem")
    with pytest.raises(membank.InvalidInput):
        api.list(user, status="lost")
    with pytest.raises(membank.InvalidInput):
        api.list(user, limit=0)
    with pytest.raises(membank.InvalidInput):
        api.note(user, "x", source="god")
    with pytest.raises(membank.InvalidInput):
        api.remember(user, "x", importance=1.5)
    with pytest.raises(membank.InvalidInput):
        api.events(user, limit=0)


def test_wrong_types_are_type_errors(api: SyncApi) -> None:
    with pytest.raises(TypeError):
        api.remember(None, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        api.recall("ann", b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        api.get("ann", 42)  # type: ignore[arg-type]


def test_users_lists_the_tenants_users_with_their_zone(api: SyncApi, user: str) -> None:
    other = user + "-b"
    api.remember(user, "My cat is Miso")
    api.note(other, "Ann plays the cello")
    listed = {u.user: u for u in api.users()}
    assert {user, other} <= set(listed)
    assert all(isinstance(u, membank.User) for u in listed.values())
    assert listed[user].time_zone and listed[user].created_at.tzinfo is not None
    assert listed[user].created_at <= listed[other].created_at
