"""membank: long-term memory for LLM agents that forgets on an Ebbinghaus curve.

``Memory`` runs membank's engine in this process (a SQLite file or PostgreSQL);
``Client`` and ``AsyncClient`` speak to a ``membank serve`` over HTTP. All three have
the same methods, return the same typed results and raise the same exceptions::

    import membank
    m = membank.Memory(db="memories.db")
    m.remember(user="ann", user_text="My cat is Miso")
    print(m.recall(user="ann", query="cat's name")[0].content)
"""

from typing import TYPE_CHECKING

from ._errors import (
    BadRequest,
    Conflict,
    ConnectionFailed,
    Forbidden,
    InternalError,
    InvalidInput,
    MembankError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    StorageFull,
    StorageUnavailable,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from ._memory import Memory, fetch_model
from ._types import (
    Archived,
    Counts,
    DateFilter,
    Event,
    ExportSummary,
    Hit,
    MaintainReport,
    MemoryList,
    MemoryRecord,
    MemoryWithRetention,
    Merge,
    Recall,
    Reminiscence,
    ScoreParts,
    SweepReport,
    User,
)

if TYPE_CHECKING:
    from ._client import AsyncClient, Client

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The clients import httpx, which Memory does not need: `import membank` stays quick.
    if name in ("Client", "AsyncClient"):
        from . import _client

        return getattr(_client, name)
    raise AttributeError(f"module 'membank' has no attribute {name!r}")


__all__ = [
    "Memory",
    "fetch_model",
    "Client",
    "AsyncClient",
    "MembankError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "InvalidInput",
    "RateLimited",
    "InternalError",
    "Unavailable",
    "StorageUnavailable",
    "ConnectionFailed",
    "StorageFull",
    "MemoryRecord",
    "MemoryWithRetention",
    "Hit",
    "ScoreParts",
    "Recall",
    "Reminiscence",
    "DateFilter",
    "MemoryList",
    "Counts",
    "Archived",
    "SweepReport",
    "Merge",
    "MaintainReport",
    "Event",
    "ExportSummary",
    "User",
]
