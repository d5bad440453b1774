"""Bundles: the folder that defines an agent (seed 000 §9), its models, loader and digest.

The names below load on first use (PEP 562): importing one small part, such as
``agen.bundle.overrides`` for the API's task models, must not load the whole loader (every
x-agen/ model and YAML), which a command like ``agen ps`` never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agen.bundle.digest import definition_id, digest_dir, digest_files, walk_bundle
    from agen.bundle.loader import Bundle, Skill, load_bundle, load_bundle_files, validate_bundle

_WHERE = {
    "Bundle": "agen.bundle.loader",
    "Skill": "agen.bundle.loader",
    "load_bundle": "agen.bundle.loader",
    "load_bundle_files": "agen.bundle.loader",
    "validate_bundle": "agen.bundle.loader",
    "definition_id": "agen.bundle.digest",
    "digest_dir": "agen.bundle.digest",
    "digest_files": "agen.bundle.digest",
    "walk_bundle": "agen.bundle.digest",
}

__all__ = [
    "Bundle",
    "Skill",
    "definition_id",
    "digest_dir",
    "digest_files",
    "load_bundle",
    "load_bundle_files",
    "validate_bundle",
    "walk_bundle",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'agen.bundle' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value
