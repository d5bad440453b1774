"""One error tree for agen.

Every error a user can meet is an `AgenError` with a stable ``code``, a human
``message`` that says what happened and what to do, and ``details`` (file,
field, id, ...). The API, CLI and TUI render the same error the same way;
third-party errors (sqlite, httpx, the MCP SDK) are mapped at the boundary.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any, ClassVar


class AgenError(Exception):
    """Base of every error agen reports to a user."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}

    def __str__(self) -> str:
        return self.message


class InvalidError(AgenError):
    """Bad input: a request, a flag, a bundle file."""

    code = "invalid"
    http_status = 400
    exit_code = 2


class TooLargeError(InvalidError):
    """A request body or a bundle is over its size limit; ``details['limit']`` is the limit in bytes."""

    code = "too_large"
    http_status = 413


class NotFoundError(AgenError):
    code = "not_found"
    http_status = 404
    exit_code = 4


class ConflictError(AgenError):
    """The request is valid but the current state refuses it (fencing, duplicates)."""

    code = "conflict"
    http_status = 409
    exit_code = 5


class DeniedError(AgenError):
    """Authenticated but not allowed (scope, namespace, permission rule)."""

    code = "denied"
    http_status = 403
    exit_code = 6


class UnauthenticatedError(AgenError):
    code = "unauthenticated"
    http_status = 401
    exit_code = 6


class UnavailableError(AgenError):
    """A dependency (Hub, Store, provider, MCP server) cannot be reached now; retry later."""

    code = "unavailable"
    http_status = 503
    exit_code = 3


class BudgetError(AgenError):
    code = "budget"
    http_status = 429
    exit_code = 7


class RateLimitedError(AgenError):
    """Admission control refused the work; ``details['stage']`` names which check."""

    code = "rate_limited"
    http_status = 429
    exit_code = 7


class FencedError(ConflictError):
    """A writer presented a stale epoch or lease id and was fenced off."""

    code = "fenced"


class StoreError(AgenError):
    code = "store"
    http_status = 500
    exit_code = 1


class SchemaTooNewError(StoreError):
    code = "schema_too_new"


class BundleError(InvalidError):
    """A bundle failed validation; ``problems`` lists every problem found."""

    code = "invalid_bundle"

    def __init__(self, message: str, problems: list[str], **details: Any) -> None:
        super().__init__(message, problems=problems, **details)
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join([self.message, *(f"  {p}" for p in self.problems)])


class CancelledError(AgenError):
    code = "cancelled"
    exit_code = 1


class ReentrantError(AgenError):
    """SDK: run() called from inside a callback of the same agent."""

    code = "reentrant"
    http_status = 409


def internal_error(log: logging.Logger, what: str) -> AgenError:
    """Called in an ``except`` block for a failure nobody planned: the log gets one record (what
    failed, a fresh error id, the traceback) and the caller an error that names only the id, so no
    exception text leaves the process and an operator can still find the cause."""
    error_id = secrets.token_hex(6)
    log.error("%s failed: internal error %s", what, error_id, exc_info=True)
    return AgenError(
        f"internal error {error_id}: the server's log has the details under this id",
        error_id=error_id,
    )


CODES: dict[str, type[AgenError]] = {
    cls.code: cls
    for cls in (
        AgenError,
        InvalidError,
        TooLargeError,
        NotFoundError,
        ConflictError,
        DeniedError,
        UnauthenticatedError,
        UnavailableError,
        BudgetError,
        RateLimitedError,
        FencedError,
        StoreError,
        SchemaTooNewError,
        BundleError,
        CancelledError,
        ReentrantError,
    )
}


def from_dict(body: dict[str, Any], status: int = 500) -> AgenError:
    """Rebuild an error from the API's one error shape (``{"error": {...}}``)."""
    err = body.get("error") or {}
    cls = CODES.get(str(err.get("code")), AgenError)
    details = dict(err.get("details") or {})
    message = str(err.get("message") or f"request failed with HTTP {status}")
    if cls is BundleError:
        problems = list(details.pop("problems", []))
        return BundleError(message, problems, **details)
    return cls(message, **details)
