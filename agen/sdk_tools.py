"""SDK internals: the per-agent dispatcher and host tools made from plain Python functions.

The dispatcher delivers host tool calls, approvals and run events in order on one thread
per agent (seed 000 §7a); a callback calling ``run()`` of the same agent is refused with
``reentrant``. A host tool's JSON schema comes from its type hints via pydantic.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import threading
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError, create_model

from agen.errors import CancelledError as AgenCancelled
from agen.runner.tools.base import Tool, ToolContext, ToolError, ToolResult

_in_callback: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "agen_sdk_callback", default=None
)


class Dispatcher:
    """One thread per agent running callbacks in submission order; async callbacks run in order on the loop."""

    def __init__(self, owner: object, name: str) -> None:
        self.owner = owner
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"agen-sdk-{name}"
        )
        self._thread_id: int | None = None
        self._lock: asyncio.Lock | None = None
        self.closed = False

    def inside(self) -> bool:
        """True when called from one of this agent's callbacks."""
        return threading.get_ident() == self._thread_id or _in_callback.get() is self.owner

    def _mark(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._thread_id = threading.get_ident()
        return fn(*args)

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.closed:
            raise AgenCancelled("the agent is closed; its pending host requests were failed")
        if inspect.iscoroutinefunction(fn):
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                token = _in_callback.set(self.owner)
                try:
                    return await fn(*args)
                finally:
                    _in_callback.reset(token)
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._executor, self._mark, fn, *args)
        except RuntimeError as e:  # executor shut down by close()
            raise AgenCancelled("the agent is closed; its pending host requests were failed") from e
        if inspect.isawaitable(result):
            result = await result
        return result

    def close(self) -> None:
        self.closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)


def host_tool(
    *,
    name: str | None = None,
    side_effect: bool = False,
    idempotent: bool = False,
    untrusted_output: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a host function's tool properties (a side-effecting tool goes through the effect ledger)."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__agen_tool__ = {  # type: ignore[attr-defined]
            "name": name,
            "side_effect": side_effect,
            "idempotent": idempotent,
            "untrusted_output": untrusted_output,
        }
        return fn

    return mark


class FunctionTool(Tool):
    """A host tool: a plain (sync or async) Python function, run on the agent's dispatcher."""

    def __init__(
        self,
        fn: Callable[..., Any],
        dispatcher: Dispatcher,
        *,
        name: str | None = None,
        side_effect: bool = False,
        idempotent: bool = False,
    ) -> None:
        marks: dict[str, Any] = getattr(fn, "__agen_tool__", {})
        self.fn = fn
        self.dispatcher = dispatcher
        self.name = name or marks.get("name") or fn.__name__
        self.description = inspect.cleandoc(fn.__doc__ or "") or f"host function {self.name}"
        self.side_effect = side_effect or bool(marks.get("side_effect"))
        self.idempotent = idempotent or bool(marks.get("idempotent"))
        self.untrusted_output = bool(marks.get("untrusted_output"))
        self._model = _arguments_model(fn, self.name)
        schema = self._model.model_json_schema()
        schema.pop("title", None)
        self.input_schema = schema

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            parsed = self._model.model_validate(args)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            raise ToolError(f"{self.name}: {where}: {first['msg']}") from None
        kwargs = {k: getattr(parsed, k) for k in type(parsed).model_fields}
        result = await self.dispatcher.call(_bind(self.fn, kwargs))
        if isinstance(result, ToolResult):
            return result
        return ToolResult(result if isinstance(result, str) else _to_text(result))


def _bind(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[[], Any]:
    if inspect.iscoroutinefunction(fn):

        async def bound_async() -> Any:
            return await fn(**kwargs)

        return bound_async

    def bound() -> Any:
        return fn(**kwargs)

    return bound


def _to_text(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _arguments_model(fn: Callable[..., Any], name: str) -> Any:
    sig = inspect.signature(fn)
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except (NameError, TypeError):
        hints = {}
    fields: dict[str, Any] = {}
    for pname, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(pname, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, default)
    return create_model(f"{name}_arguments", **fields)
