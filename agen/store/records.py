"""Typed rows: the one way code outside the Store reads what a SELECT returns.

A row type is a ``NamedTuple`` whose fields are the SELECT's column names (``columns(Type)`` writes
the list, so the query and the fields cannot drift apart). ``tx.row(Type, sql)`` /
``tx.rows(Type, sql)`` (and the Store's async ``row``/``rows``) return instances of it, so callers
use names mypy checks instead of ``row["…"]`` subscripts; the declaration is the type, with no
``from_row`` written per class.

The reader of a type is built once, from its annotations: an ``Enum`` field is converted from the
stored value by one dict lookup, a ``bool`` field from SQLite's 0/1, a ``float`` field from an
integer or Postgres ``numeric``; ``X | None`` keeps None; ``Annotated[T, fn]`` is converted by
``fn`` (``Count`` and ``Amount`` below: an aggregate's NULL as 0, Postgres' ``numeric`` ``SUM`` as a
number). Integers are not converted otherwise: both engines return a table's integer columns as
``int``, and a conversion on each of a task row's sixteen integer columns would cost the hot path
about a microsecond per row. Every other column is taken as the Store
holds it (JSON columns stay text, decoded where used). Extra columns (a join) are ignored; a column
a hand-made row leaves out takes the field's default.

``NamedTuple``s, not pydantic models or dataclasses, by measurement: a task row is built on every
submit, lease, start and completion, and building the 52-column row through pydantic-core took ~11 %
of the queue transactions' CPU; one ``itemgetter`` and one ``tuple.__new__`` take ~5 %.
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Annotated, Any, TypeVar

R = TypeVar("R", bound=tuple[Any, ...])


def _count(value: Any) -> int:
    return 0 if value is None else int(value)


def _amount(value: Any) -> float:
    return 0.0 if value is None else float(value)


Count = Annotated[int, _count]
"""An integer a SELECT computes (``SUM``, a ``LEFT JOIN``'s column): NULL reads as 0."""
Amount = Annotated[float, _amount]
"""A number a SELECT computes (``SUM(cost_usd)``): NULL reads as 0.0, ``numeric`` as float."""

Reader = Callable[[Mapping[str, Any]], Any]


def read(row_type: type[R], row: Mapping[str, Any]) -> R:
    """The typed row of one Store row (a mapping of column -> value)."""
    fn = _READERS.get(row_type)
    if fn is None:
        fn = _READERS[row_type] = _build(row_type)
    result: R = fn(row)
    return result


def read_all(row_type: type[R], rows: typing.Iterable[Mapping[str, Any]]) -> list[R]:
    """The typed rows of several Store rows."""
    fn = _READERS.get(row_type)
    if fn is None:
        fn = _READERS[row_type] = _build(row_type)
    return [fn(r) for r in rows]


@functools.cache
def columns(row_type: type[tuple[Any, ...]], alias: str = "") -> str:
    """The SELECT list of a row type (``id, namespace, name``), each prefixed by ``alias.``."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + f for f in _fields(row_type))


_READERS: dict[type[Any], Reader] = {}


def _fields(row_type: type[tuple[Any, ...]]) -> tuple[str, ...]:
    fields: tuple[str, ...] | None = getattr(row_type, "_fields", None)
    if fields is None:
        raise TypeError(f"{row_type.__name__} is not a NamedTuple: rows are read into NamedTuples")
    return fields


def _convert(hint: Any) -> Callable[[Any], Any] | None:
    """How a stored value becomes the field's type, or None when it is taken as it is."""
    if typing.get_origin(hint) is Annotated:
        return next((m for m in hint.__metadata__ if callable(m)), None)
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            return None
        hint = args[0]
    fn: Callable[[Any], Any]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        fn = {m.value: m for m in hint}.__getitem__
    elif hint is bool or hint is float:
        fn = hint
    else:
        return None
    if nullable:
        inner = fn
        return lambda v: None if v is None else inner(v)
    return fn


def _build(row_type: type[R]) -> Callable[[Mapping[str, Any]], R]:
    fields = _fields(row_type)
    defaults: dict[str, Any] = getattr(row_type, "_field_defaults", {})
    hints = typing.get_type_hints(row_type, include_extras=True)
    fixes = [(i, fn) for i, f in enumerate(fields) if (fn := _convert(hints.get(f))) is not None]
    take = itemgetter(*fields)
    single = len(fields) == 1
    new = tuple.__new__
    name = row_type.__name__

    def read_one(row: Mapping[str, Any]) -> R:
        try:
            got = take(row)
        except KeyError:  # a hand-made row (tests) may leave defaulted columns out
            missing = [f for f in fields if f not in row and f not in defaults]
            if missing:
                raise ValueError(f"{name} needs column(s) {', '.join(missing)}") from None
            got = tuple(row[f] if f in row else defaults[f] for f in fields)
            single_got = False
        else:
            single_got = single
        values = [got] if single_got else list(got)
        i = -1
        try:
            for i, fn in fixes:
                values[i] = fn(values[i])
        except (KeyError, ValueError, TypeError) as e:  # a value the Store never writes
            raise ValueError(
                f"{name}.{fields[i]}: {values[i]!r} is not a known value ({e})"
            ) from None
        return new(row_type, values)

    return read_one
