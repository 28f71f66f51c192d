"""Typed results: the REST API's JSON shapes as frozen dataclasses, field for field.

Each class has the fields of its REST schema (``crates/membank-server/src/wire.rs``), with
three changes a Python reader expects: instants (``occurred_at``, ``now``, …) are aware
``datetime`` objects in UTC rather than RFC 3339 strings; ``from``/``to`` of a date filter
are ``date_from``/``date_to`` (``from`` is a keyword); an archived memory's ``S`` and ``R``
are ``strength`` and ``retention``. Days (``day``) stay ``YYYY-MM-DD`` strings: they are
calendar days in the user's time zone, not instants. Fields a newer server adds are
ignored, so an older package keeps working against it.

``Memory.recall`` returns a :class:`Recall`, a list of :class:`Hit` that also carries the
rest of the recall's answer (``query_id``, ``strengthened``, ``reminiscence``, …);
``Memory.list`` a :class:`MemoryList`, likewise.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = [
    "MemoryRecord",
    "MemoryWithRetention",
    "ScoreParts",
    "Hit",
    "Reminiscence",
    "DateFilter",
    "Recall",
    "Counts",
    "MemoryList",
    "Archived",
    "SweepReport",
    "Merge",
    "MaintainReport",
    "Event",
    "ExportSummary",
    "User",
]

Json = Mapping[str, Any]


def parse_instant(text: str) -> datetime:
    """An RFC 3339 instant as the server writes it (``…Z``) as an aware datetime."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _opt_float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


def _opt_int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


def _opt_str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _memory_fields(j: Json) -> Dict[str, Any]:
    return dict(
        id=j["id"],
        kind=j["kind"],
        source=j["source"],
        content=j.get("content"),
        user_text=j.get("user_text"),
        assistant_text=j.get("assistant_text"),
        day=j["day"],
        occurred_at=parse_instant(j["occurred_at"]),
        recorded_at=parse_instant(j["recorded_at"]),
        status=j["status"],
        strength=float(j["strength"]),
        recall_count=int(j["recall_count"]),
        last_recalled_at=parse_instant(j["last_recalled_at"]),
        pinned=bool(j["pinned"]),
        layer=j["layer"],
        importance=float(j["importance"]),
        base_importance=float(j["base_importance"]),
        fade_age=float(j["fade_age"]),
        access_frequency=float(j["access_frequency"]),
        user=j["user"],
        agent=j.get("agent"),
        session=j.get("session"),
        derived_from=list(j.get("derived_from", [])),
        metadata=dict(j.get("metadata", {})),
    )


@dataclass(frozen=True)
class MemoryRecord:
    """A stored memory (REST ``MemoryOut``)."""

    #: Stable id.
    id: str
    #: ``turn``, ``note``, ``daily_summary``, ``fused``, …
    kind: str
    #: Who said it: ``user``, ``assistant``, ``agent``, ``system``.
    source: str
    #: The recalled text (``None`` once erased).
    content: Optional[str]
    #: For turns: the person's words.
    user_text: Optional[str]
    #: For turns: the assistant's reply.
    assistant_text: Optional[str]
    #: Local calendar day, ``YYYY-MM-DD``, in the user's time zone.
    day: str
    #: When it was said.
    occurred_at: datetime
    #: When it was stored.
    recorded_at: datetime
    #: ``active``, ``archived``, ``superseded`` or ``erased``.
    status: str
    #: Strength S.
    strength: float
    #: Recalls so far.
    recall_count: int
    #: Last strengthening recall (or ``occurred_at``).
    last_recalled_at: datetime
    #: Never decays when true.
    pinned: bool
    #: FadeMem layer: ``short`` or ``long``.
    layer: str
    #: Importance in [0, 1] as of the last maintenance cycle.
    importance: float
    #: Importance at ingestion in [0, 1].
    base_importance: float
    #: FadeMem: effective age in days through the last access.
    fade_age: float
    #: FadeMem: recall count decayed with time.
    access_frequency: float
    #: The user it belongs to.
    user: str
    #: Agent label.
    agent: Optional[str]
    #: Session label.
    session: Optional[str]
    #: Ids of the memories a derived memory was made from.
    derived_from: List[str]
    #: Free-form string metadata.
    metadata: Dict[str, str]

    @classmethod
    def from_json(cls, j: Json) -> MemoryRecord:
        return cls(**_memory_fields(j))


@dataclass(frozen=True)
class MemoryWithRetention(MemoryRecord):
    """A memory with its retention now (REST ``MemoryWithRetention``): ``get`` and ``list``."""

    #: Retention now under the configured policy (1 when pinned).
    retention: float
    #: Active, unpinned and already below the archive threshold: the next sweep archives it.
    past_threshold: bool

    @classmethod
    def from_json(cls, j: Json) -> MemoryWithRetention:
        return cls(**_memory_fields(j), retention=float(j["retention"]), past_threshold=bool(j["past_threshold"]))


@dataclass(frozen=True)
class ScoreParts:
    """The terms of a recall score (REST ``ScorePartsOut``)."""

    dense: float
    lexical: float
    date: float
    feedback: float
    neighbour: float
    speaker: float
    retention: float
    diversity: float
    day_summary: bool

    @classmethod
    def from_json(cls, j: Json) -> ScoreParts:
        return cls(
            dense=float(j["dense"]),
            lexical=float(j["lexical"]),
            date=float(j["date"]),
            feedback=float(j["feedback"]),
            neighbour=float(j["neighbour"]),
            speaker=float(j["speaker"]),
            retention=float(j["retention"]),
            diversity=float(j["diversity"]),
            day_summary=bool(j["day_summary"]),
        )


@dataclass(frozen=True)
class Hit(MemoryRecord):
    """One recall result: the memory as it is after this recall, with its scores (REST
    ``RecallHitOut``)."""

    #: The fused score the hit was ranked by (reciprocal rank fusion and its factors).
    score: float
    #: Cosine similarity to the query, if a dense candidate.
    dense_score: Optional[float]
    #: BM25 score, if a lexical candidate.
    lexical_score: Optional[float]
    #: Retention at the query's time after this recall.
    retention: float
    #: Retention at the query's time before this recall.
    retention_before: float
    #: The part of ``score`` lent by an adjacent turn, if any.
    neighbour_score: Optional[float]
    #: Place in the dense ranking, from 1.
    dense_rank: Optional[int]
    #: Place in the lexical ranking, from 1.
    lexical_rank: Optional[int]
    #: How ``score`` was made.
    score_parts: ScoreParts
    #: Found in the archive by reminiscence.
    reminisced: bool

    @classmethod
    def from_json(cls, j: Json) -> Hit:
        return cls(
            **_memory_fields(j),
            score=float(j["score"]),
            dense_score=_opt_float(j.get("dense_score")),
            lexical_score=_opt_float(j.get("lexical_score")),
            retention=float(j["retention"]),
            retention_before=float(j["retention_before"]),
            neighbour_score=_opt_float(j.get("neighbour_score")),
            dense_rank=_opt_int(j.get("dense_rank")),
            lexical_rank=_opt_int(j.get("lexical_rank")),
            score_parts=ScoreParts.from_json(j["score_parts"]),
            reminisced=bool(j["reminisced"]),
        )


@dataclass(frozen=True)
class Reminiscence:
    """Whether a recall consulted the archive, and the scores that decided it."""

    #: ``auto``, ``never`` or ``always``.
    mode: str
    probed: bool
    consulted: bool
    archived_hits: int
    active_best: Optional[float]
    active_bar: Optional[float]
    archived_best: Optional[float]
    margin: float

    @classmethod
    def from_json(cls, j: Json) -> Reminiscence:
        return cls(
            mode=j["mode"],
            probed=bool(j["probed"]),
            consulted=bool(j["consulted"]),
            archived_hits=int(j["archived_hits"]),
            active_best=_opt_float(j.get("active_best")),
            active_bar=_opt_float(j.get("active_bar")),
            archived_best=_opt_float(j.get("archived_best")),
            margin=float(j["margin"]),
        )


@dataclass(frozen=True)
class DateFilter:
    """The days a recall was restricted to (``filter``) or boosted towards (``boost``)."""

    #: First day, if bounded (REST ``from``).
    date_from: Optional[str]
    #: Last day, if bounded (REST ``to``).
    date_to: Optional[str]
    #: The time expression in the query the days were read from.
    from_query: Optional[str]
    #: ``boost`` or ``filter``.
    mode: str
    exact: bool
    #: ``latest_with_memories`` or ``latest`` when the year was inferred.
    year_inferred: Optional[str]

    @classmethod
    def from_json(cls, j: Json) -> DateFilter:
        return cls(
            date_from=_opt_str(j.get("from")),
            date_to=_opt_str(j.get("to")),
            from_query=_opt_str(j.get("from_query")),
            mode=j["mode"],
            exact=bool(j["exact"]),
            year_inferred=_opt_str(j.get("year_inferred")),
        )


class Recall(List[Hit]):
    """A recall's hits, best first, with the rest of its answer (REST ``RecallOut``)."""

    def __init__(
        self,
        hits: Iterable[Hit],
        *,
        query_id: str,
        now: datetime,
        strengthened: bool,
        time_range: Optional[Tuple[str, str]],
        date_filter: Optional[DateFilter],
        reminiscence: Reminiscence,
        user_known: bool,
    ) -> None:
        super().__init__(hits)
        #: Identifies the recall in the event log (``used`` takes it).
        self.query_id = query_id
        #: The query's time.
        self.now = now
        #: Whether the hits were strengthened.
        self.strengthened = strengthened
        #: The days a time expression in the query referred to.
        self.time_range = time_range
        #: The days the recall was restricted to or boosted towards.
        self.date_filter = date_filter
        #: Whether the archive was consulted.
        self.reminiscence = reminiscence
        #: Whether anything was ever stored for this user.
        self.user_known = user_known

    @property
    def hits(self) -> List[Hit]:
        """The hits as a plain list."""
        return list(self)

    @classmethod
    def from_json(cls, j: Json) -> Recall:
        time_range = j.get("time_range")
        date_filter = j.get("date_filter")
        return cls(
            (Hit.from_json(h) for h in j["results"]),
            query_id=j["query_id"],
            now=parse_instant(j["now"]),
            strengthened=bool(j["strengthened"]),
            time_range=None if time_range is None else (str(time_range[0]), str(time_range[1])),
            date_filter=None if date_filter is None else DateFilter.from_json(date_filter),
            reminiscence=Reminiscence.from_json(j["reminiscence"]),
            user_known=bool(j["user_known"]),
        )


@dataclass(frozen=True)
class Counts:
    """Memories per status over the user's whole scope."""

    active: int
    archived: int
    superseded: int
    erased: int


class MemoryList(List[MemoryWithRetention]):
    """A page of memories with the counts and threshold of the listing (REST ``ListOut``)."""

    def __init__(
        self,
        memories: Iterable[MemoryWithRetention],
        *,
        now: datetime,
        counts: Counts,
        archive_below: Optional[float],
        past_threshold: int,
        user_known: bool,
    ) -> None:
        super().__init__(memories)
        #: When retention was computed.
        self.now = now
        #: Counts per status over the whole scope.
        self.counts = counts
        #: Retention below which the next sweep archives an active, unpinned memory.
        self.archive_below = archive_below
        #: How many of the listed memories are past it.
        self.past_threshold = past_threshold
        #: Whether anything was ever stored for this user.
        self.user_known = user_known

    @property
    def memories(self) -> List[MemoryWithRetention]:
        """The memories as a plain list."""
        return list(self)

    @classmethod
    def from_json(cls, j: Json) -> MemoryList:
        c = j["counts"]
        return cls(
            (MemoryWithRetention.from_json(m) for m in j["memories"]),
            now=parse_instant(j["now"]),
            counts=Counts(
                active=int(c["active"]),
                archived=int(c["archived"]),
                superseded=int(c["superseded"]),
                erased=int(c["erased"]),
            ),
            archive_below=_opt_float(j.get("archive_below")),
            past_threshold=int(j["past_threshold"]),
            user_known=bool(j["user_known"]),
        )


@dataclass(frozen=True)
class Archived:
    """One memory a sweep or cycle archived, with the numbers that decided it."""

    id: str
    #: Time since last recall in policy units (FadeMem: effective age in days).
    t: float
    #: Strength S (REST ``S``).
    strength: float
    #: Retention R (REST ``R``).
    retention: float
    #: ``threshold``, ``stochastic`` or ``fademem``.
    mode: str
    threshold: Optional[float]
    draw: Optional[float]

    @classmethod
    def from_json(cls, j: Json) -> Archived:
        return cls(
            id=j["id"],
            t=float(j["t"]),
            strength=float(j["S"]),
            retention=float(j["R"]),
            mode=j["mode"],
            threshold=_opt_float(j.get("threshold")),
            draw=_opt_float(j.get("draw")),
        )


@dataclass(frozen=True)
class SweepReport:
    """What a sweep examined and archived (REST ``SweepOut``)."""

    now: datetime
    dry_run: bool
    examined: int
    archived: List[Archived]
    deferred: int
    kept: int

    @classmethod
    def from_json(cls, j: Json) -> SweepReport:
        return cls(
            now=parse_instant(j["now"]),
            dry_run=bool(j["dry_run"]),
            examined=int(j["examined"]),
            archived=[Archived.from_json(a) for a in j["archived"]],
            deferred=int(j["deferred"]),
            kept=int(j["kept"]),
        )


@dataclass(frozen=True)
class Merge:
    """A near-duplicate merged into a newer copy."""

    #: The memory superseded.
    id: str
    #: The copy that stays.
    by: str
    similarity: float
    overlap: float


@dataclass(frozen=True)
class MaintainReport:
    """One maintenance cycle's report for one user (REST ``MaintainOut``)."""

    user: str
    now: datetime
    dry_run: bool
    #: ``memorybank`` or ``fademem``.
    policy: str
    examined: int
    promoted: int
    demoted: int
    archived: int
    merged: int
    fused: int
    conflicts: int
    rated: int
    deferred: int
    #: What was not done, and why.
    skipped: List[str]
    archived_memories: List[Archived]
    merges: List[Merge]
    fused_memories: List[str]

    @classmethod
    def from_json(cls, j: Json) -> MaintainReport:
        return cls(
            user=j["user"],
            now=parse_instant(j["now"]),
            dry_run=bool(j["dry_run"]),
            policy=j["policy"],
            examined=int(j["examined"]),
            promoted=int(j["promoted"]),
            demoted=int(j["demoted"]),
            archived=int(j["archived"]),
            merged=int(j["merged"]),
            fused=int(j["fused"]),
            conflicts=int(j["conflicts"]),
            rated=int(j["rated"]),
            deferred=int(j["deferred"]),
            skipped=[str(s) for s in j["skipped"]],
            archived_memories=[Archived.from_json(a) for a in j["archived_memories"]],
            merges=[
                Merge(id=m["id"], by=m["by"], similarity=float(m["similarity"]), overlap=float(m["overlap"]))
                for m in j["merges"]
            ],
            fused_memories=[str(f) for f in j["fused_memories"]],
        )


@dataclass(frozen=True)
class Event:
    """One event of the user's log (content-free; REST ``EventOut``)."""

    #: Position in the store's log (shared by all users; ``after`` takes it).
    seq: int
    id: str
    #: What happened: ``created``, ``recalled``, ``archived``, …
    kind: str
    memory_id: Optional[str]
    #: When it took effect.
    at: datetime
    #: The numbers behind it.
    data: Dict[str, Any]

    @classmethod
    def from_json(cls, j: Json) -> Event:
        return cls(
            seq=int(j["seq"]),
            id=j["id"],
            kind=j["kind"],
            memory_id=j.get("memory_id"),
            at=parse_instant(j["at"]),
            data=dict(j.get("data") or {}),
        )


@dataclass(frozen=True)
class ExportSummary:
    """A finished export: the file and the counts of its end line."""

    path: str
    users: int
    memories: int
    events: int


@dataclass(frozen=True)
class User:
    """A user of the tenant (``GET /v1/users``): its id, the time zone its days are
    counted in, and its first write."""

    user: str
    time_zone: str
    created_at: datetime

    @classmethod
    def from_json(cls, j: Json) -> User:
        return cls(user=str(j["user"]), time_zone=str(j["time_zone"]), created_at=parse_instant(str(j["created_at"])))
