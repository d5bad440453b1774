"""The bundle templates `agen init` starts from: where they live, what they are, how to copy one.

Templates ship in three layouts: a source checkout (``<repo>/bundles``), an installed wheel
(pyproject force-includes ``bundles`` as ``agen/_bundles``) and a PyInstaller binary
(``sys._MEIPASS/agen/_bundles``). Each is an ordinary bundle folder, so what ``agen init``
writes is exactly what the loader validates.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agen.errors import InvalidError, NotFoundError

# The order `agen init --list` shows them in (seed 002); any other folder follows, by name.
TEMPLATE_ORDER = (
    "hello",
    "researcher",
    "coordinator",
    "writer",
    "editor",
    "pr-reviewer",
    "fleet-steward",
    "approval-triage",
    "assistant",
    "coder",
    "ci-fixer",
    "support",
    "incident-responder",
    "data-analyst",
)
DEFAULT_TEMPLATE = "hello"

# Same rule as plugin.json "name" (BUNDLE_FORMAT.md): lowercase, digits and '-', starts with a letter.
_BUNDLE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
# Never copied into a new bundle: editor and tool litter, matching the digest's ignore rules.
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})
_SKIP_NAMES = frozenset({".DS_Store"})
_SKIP_SUFFIXES = ("~", ".swp", ".pyc")


@dataclass(frozen=True)
class Template:
    """One template: its name (the folder name), what it is for, and where it lives."""

    name: str
    description: str
    path: Path


def is_bundle_name(name: str) -> bool:
    return bool(_BUNDLE_NAME.match(name))


def templates_dir() -> Path:
    """The folder holding the templates, in a PyInstaller binary, a wheel or a source checkout."""
    candidates = candidate_dirs(Path(__file__).resolve().parent.parent)
    for candidate in candidates:
        if (candidate / DEFAULT_TEMPLATE / "plugin.json").is_file():
            return candidate
    raise NotFoundError(
        "the bundle templates are missing from this agen installation "
        f"(looked in {', '.join(str(c) for c in candidates)}); reinstall agen",
        looked_in=[str(c) for c in candidates],
    )


def candidate_dirs(package: Path) -> list[Path]:
    """Where templates may be, best first, for the ``agen`` package folder ``package``."""
    candidates: list[Path] = []
    frozen_root = getattr(sys, "_MEIPASS", None)
    if isinstance(frozen_root, str):
        candidates.append(Path(frozen_root) / "agen" / "_bundles")  # PyInstaller --add-data
    candidates.append(package / "_bundles")  # wheel: pyproject force-include
    candidates.append(package.parent / "bundles")  # source checkout
    return candidates


def list_templates(root: Path | None = None) -> list[Template]:
    """Every template folder (one with a plugin.json), in the reference order."""
    base = root if root is not None else templates_dir()
    found: list[Template] = []
    for entry in base.iterdir():
        plugin = entry / "plugin.json"
        if entry.is_dir() and plugin.is_file():
            description = read_json(plugin).get("description", "")
            found.append(Template(entry.name, str(description), entry))
    rank = {name: i for i, name in enumerate(TEMPLATE_ORDER)}
    found.sort(key=lambda t: (rank.get(t.name, len(rank)), t.name))
    return found


def get_template(name: str, root: Path | None = None) -> Template:
    """The template called ``name``; InvalidError (usage) lists the available ones when unknown."""
    templates = list_templates(root)
    for template in templates:
        if template.name == name:
            return template
    names = ", ".join(t.name for t in templates)
    raise InvalidError(
        f"unknown template {name!r}; available templates: {names} (see: agen init --list)",
        field="template",
        available=[t.name for t in templates],
    )


def copy_template(template: Template, dest: Path) -> list[str]:
    """Copy a template's files into ``dest`` (missing or empty); returns the written paths.

    Refuses a destination that already holds anything, so `agen init` never overwrites work.
    """
    if dest.exists() and not dest.is_dir():
        raise InvalidError(
            f"{dest} exists and is not a directory; choose another path for the new bundle",
            path=str(dest),
        )
    if dest.is_dir() and any(dest.iterdir()):
        raise InvalidError(
            f"{dest} is not empty; choose a new or empty directory "
            f"(e.g. agen init {dest}-2 --template {template.name})",
            path=str(dest),
        )
    written: list[str] = []
    for source, rel in _template_files(template.path):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        written.append(rel)
    dest.mkdir(parents=True, exist_ok=True)
    return written


def _template_files(root: Path) -> list[tuple[Path, str]]:
    files: list[tuple[Path, str]] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if name in _SKIP_NAMES or name.endswith(_SKIP_SUFFIXES):
                continue
            path = Path(folder) / name
            files.append((path, path.relative_to(root).as_posix()))
    return files


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object file; InvalidError names the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidError(
            f"{path}: cannot read JSON ({e}); fix or restore the file", path=str(path)
        ) from None
    if not isinstance(data, dict):
        raise InvalidError(f"{path}: must hold a JSON object", path=str(path))
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Rewrite a JSON file with 2-space indent, keys in their original order."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


TIERS = ("low", "medium", "high", "xhigh", "max")
# Routing models with fewer tiers than the full set (seed 000 §8); the others take all five.
_ROUTER_TOP_TIER = {"typesafe/jev-router": "high"}


@dataclass(frozen=True)
class HarnessChanges:
    """What `agen init` was asked to change in the new bundle's harness.json."""

    model: str | None = None
    fallback: str | None = None  # comma-separated; "none" clears
    tier: str | None = None
    max_tier: str | None = None

    def check(self) -> None:
        """Refuse bad values before anything is written, naming the flag."""
        if self.model is not None and not self.model.strip():
            raise InvalidError(
                "--model: must not be empty; give a model such as gpt-4o-mini", field="model"
            )
        for flag, value in (("--tier", self.tier), ("--max-tier", self.max_tier)):
            if value is not None and value not in TIERS:
                raise InvalidError(
                    f"{flag}: {value!r} is not a tier; use one of {', '.join(TIERS)}", field=flag
                )
        if self.tier and self.max_tier and TIERS.index(self.tier) > TIERS.index(self.max_tier):
            raise InvalidError(
                f"--tier {self.tier} is above --max-tier {self.max_tier}; lower the tier or raise the cap",
                field="--tier",
            )


def apply_harness_changes(harness: dict[str, Any], changes: HarnessChanges) -> list[str]:
    """Edit a harness.json object in place; returns one line per change, for the user.

    A new model on the "auto" or "fake" provider switches to "openrouter" when it names an
    OpenRouter model ("vendor/model"), else to "auto", which finds a key or a local server.
    """
    notes: list[str] = []
    if changes.model is not None:
        model = changes.model.strip()
        harness["model"] = model
        provider = harness.get("provider")
        if provider in ("auto", "fake"):
            harness["provider"] = "openrouter" if "/" in model else "auto"
            harness.pop("fake", None)
        notes.append(f"model: {model} (provider {harness.get('provider')})")
    if changes.fallback is not None:
        models = [m.strip() for m in changes.fallback.split(",") if m.strip()]
        if changes.fallback.strip().lower() == "none" or not models:
            harness.pop("fallbackModels", None)
            notes.append("fallbackModels: cleared")
        else:
            harness["fallbackModels"] = models
            notes.append(f"fallbackModels: {', '.join(models)}")
    if changes.tier is not None or changes.max_tier is not None:
        router = harness.get("router")
        router = dict(router) if isinstance(router, dict) else {}
        if changes.tier is not None:
            router["tier"] = changes.tier
        if changes.max_tier is not None:
            router["maxTier"] = changes.max_tier
        _check_router_tiers(str(harness.get("model", "")), router)
        harness["router"] = router
        notes.append(
            "router: " + ", ".join(f"{k} {router[k]}" for k in ("tier", "maxTier") if k in router)
        )
    return notes


def _check_router_tiers(model: str, router: dict[str, Any]) -> None:
    top = _ROUTER_TOP_TIER.get(model)
    if top is None:
        return
    for key in ("tier", "maxTier"):
        value = router.get(key)
        if isinstance(value, str) and value in TIERS and TIERS.index(value) > TIERS.index(top):
            flag = "--tier" if key == "tier" else "--max-tier"
            raise InvalidError(
                f"{flag}: {model} has tiers {', '.join(TIERS[: TIERS.index(top) + 1])}; "
                f"{value!r} is above its top tier",
                field=flag,
            )
