"""The exceptions: one class per REST error code, the same from ``Memory`` and ``Client``.

Every failure membank reports is a :class:`MembankError` whose ``code`` is the REST API's
stable error code (``{"error": {"code", "message"}}``) and whose message is the server's.
``Memory`` gets them from the same handlers a server runs, so a caller catches the same
class whichever it uses. ``status`` is the HTTP status for a ``Client`` (``None``
in-process). Two classes are the client's own: :class:`ConnectionFailed`, when no answer
came (a closed or unreachable server, a timeout), and a code this version does not know,
which is raised as a plain :class:`MembankError` carrying that code.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
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
    "error_from",
]


class MembankError(Exception):
    """A membank failure: ``code`` (the REST error code), ``message``, ``status``."""

    #: The REST error code of this class.
    default_code = "internal"

    def __init__(self, message: str, *, code: Optional[str] = None, status: Optional[int] = None) -> None:
        super().__init__(message)
        #: Stable, machine-readable code, e.g. ``invalid_input``, ``not_found``.
        self.code: str = code or self.default_code
        #: What went wrong, for a person.
        self.message: str = message
        #: The HTTP status of the answer (``None`` in-process, or when no answer came).
        self.status: Optional[int] = status

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class BadRequest(MembankError, ValueError):
    """``bad_request`` (400): the request did not parse (malformed JSON or query)."""

    default_code = "bad_request"


class Unauthorized(MembankError):
    """``unauthorized`` (401): no API key, or an unknown or revoked one."""

    default_code = "unauthorized"


class Forbidden(MembankError):
    """``forbidden`` (403): the key may not act for this tenant or user."""

    default_code = "forbidden"


class NotFound(MembankError, LookupError):
    """``not_found`` (404): no such memory (or user, or endpoint) in the caller's scope."""

    default_code = "not_found"


class MethodNotAllowed(MembankError):
    """``method_not_allowed`` (405): the endpoint does not take that method."""

    default_code = "method_not_allowed"


class Conflict(MembankError):
    """``conflict`` (409): the operation does not apply to the memory's state (restoring
    an active memory, pinning an erased one), or a maintenance cycle for the user is
    running already. Opening a database this version cannot use raises it too."""

    default_code = "conflict"


class PayloadTooLarge(MembankError, ValueError):
    """``payload_too_large`` (413): the request body is over the server's limit (1 MiB)."""

    default_code = "payload_too_large"


class UnsupportedMediaType(MembankError):
    """``unsupported_media_type`` (415): the body is not JSON."""

    default_code = "unsupported_media_type"


class InvalidInput(MembankError, ValueError):
    """``invalid_input`` (422): a value breaks a rule: a blank user or text, a text over
    32 KiB, ``k`` outside 1..200, a time that does not parse, an unknown status."""

    default_code = "invalid_input"


class RateLimited(MembankError):
    """``rate_limited`` (429): too many requests for this key; ``retry_after`` seconds."""

    default_code = "rate_limited"

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: Optional[int] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message, code=code, status=status)
        #: Seconds until a request will be accepted again, when the server said.
        self.retry_after = retry_after


class InternalError(MembankError):
    """``internal`` (500): something failed inside; the cause is in the server's log
    (in-process: on standard error)."""

    default_code = "internal"


class Unavailable(MembankError):
    """``unavailable`` (503): the embedding model is missing or failed, the database
    cannot be reached, an LLM is needed and none is configured, or the Memory is closed;
    and ``storage_unavailable`` (503, with ``Retry-After``): the database, or a node of a
    distributed one, cannot be reached right now, so retrying shortly can succeed."""

    default_code = "unavailable"


#: The name the issue and the docs of other memory services use for ``unavailable``: the
#: same class, so ``except membank.StorageUnavailable`` catches every ``unavailable``
#: failure, a closed server's included.
StorageUnavailable = Unavailable


class ConnectionFailed(Unavailable):
    """``unavailable``, from the client itself: the server could not be reached (closed,
    refused, unknown host) or did not answer within the timeout. Nothing is known about
    whether a write that timed out was stored."""


class StorageFull(MembankError):
    """``storage_full`` (507): the database's disk is full; nothing was stored."""

    default_code = "storage_full"


_BY_CODE: Dict[str, Type[MembankError]] = {
    cls.default_code: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        InvalidInput,
        RateLimited,
        InternalError,
        Unavailable,
        StorageFull,
    )
}


# A database (or Citus node) that is away for now: the same class as ``unavailable``.
_BY_CODE["storage_unavailable"] = Unavailable


def error_from(code: str, message: str, status: Optional[int] = None) -> MembankError:
    """The exception for a REST error ``code`` (a plain :class:`MembankError` for a code
    this version does not know)."""
    cls = _BY_CODE.get(code, MembankError)
    return cls(message, code=code, status=status)
