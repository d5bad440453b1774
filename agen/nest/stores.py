"""Which store a Nest's instances write their run data to: ``agen nest run --store`` for every namespace,
or ``--store-for NS=URL`` for one (e.g. a host role limited to it, ``agen store host-role
--namespace NS``), and with ``--store-for-only`` no namespace without one runs here, so none falls
back to ``--store``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agen.errors import InvalidError

if TYPE_CHECKING:
    from agen.store import Store

_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def parse_store_for(values: list[str]) -> dict[str, str]:
    """``--store-for NS=URL`` (repeatable) as {namespace: url}; one URL per namespace."""
    out: dict[str, str] = {}
    for value in values:
        ns, sep, url = value.partition("=")
        ns, url = ns.strip(), url.strip()
        if not sep or not _NAMESPACE.fullmatch(ns) or not url:
            raise InvalidError(
                f"--store-for {value[:80]!r}: use NAMESPACE=URL, e.g. team-a=postgres://agen_host_a@db/agen",
                field="--store-for",
            )
        if ns in out and out[ns] != url:
            raise InvalidError(
                f"--store-for names namespace {ns} twice, with two URLs; give it one",
                field="--store-for",
            )
        out[ns] = url
    return out


@dataclass
class NestStores:
    """The stores a Nest opened: ``default`` (None with --store-for-only) and one per mapped URL."""

    default: Store | None
    by_namespace: dict[str, Store] = field(default_factory=dict)

    @classmethod
    async def open(cls, default: str | None, store_for: dict[str, str]) -> NestStores:
        from agen.store import open_store

        opened: dict[str, Store] = {}
        try:
            for url in dict.fromkeys([*([default] if default else []), *store_for.values()]):
                opened[url] = await open_store(url)
        except BaseException:
            for store in opened.values():
                await store.close()
            raise
        return cls(
            default=opened[default] if default else None,
            by_namespace={ns: opened[url] for ns, url in store_for.items()},
        )

    def all(self) -> list[Store]:
        """Each opened store once."""
        stores = [*([self.default] if self.default else []), *self.by_namespace.values()]
        return list({id(s): s for s in stores}.values())

    def for_namespace(self, namespace: str) -> Store:
        store = self.by_namespace.get(namespace, self.default)
        if store is None:
            mapped = ", ".join(sorted(self.by_namespace))
            raise InvalidError(
                f"namespace {namespace} has no --store-for on this Nest (it runs {mapped} only: "
                "--store-for-only); place that namespace's deployments on another Nest, or add "
                f"--store-for {namespace}=URL",
                namespace=namespace,
            )
        return store

    def describe(self) -> str:
        parts = [f"store {self.default.url}"] if self.default else []
        parts += [f"{ns}: {s.url}" for ns, s in sorted(self.by_namespace.items())]
        return ", ".join(parts)

    async def close(self) -> None:
        for store in self.all():
            await store.close()
