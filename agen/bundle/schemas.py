"""JSON Schemas for every bundle file, generated from the models into spec/bundle/.

``python -m agen.bundle.schemas`` rewrites them; a test fails when the committed copies are stale.
``--check`` exits 1 instead of writing when they differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from agen.bundle.agent import AgentFrontMatter, Secrets
from agen.bundle.config import Config
from agen.bundle.harness import Harness
from agen.bundle.scenario import Scenario
from agen.bundle.standard import McpConfig, PluginManifest, SkillFrontMatter

SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "plugin": (PluginManifest, "plugin.json"),
    "mcp": (McpConfig, "mcp.json"),
    "skill-frontmatter": (SkillFrontMatter, "skills/<name>/SKILL.md front matter"),
    "agent-frontmatter": (AgentFrontMatter, "x-agen/agent.md front matter"),
    "harness": (Harness, "x-agen/harness.json"),
    "config": (Config, "x-agen/config.json"),
    "secrets": (Secrets, "x-agen/secrets.json"),
    "scenario": (Scenario, "x-agen/evals/<name>.json (an eval scenario)"),
}
SPEC_DIR = Path(__file__).resolve().parents[2] / "spec" / "bundle"


def render(name: str) -> str:
    """One schema as the exact text committed in spec/bundle/<name>.schema.json."""
    model, what = SCHEMAS[name]
    schema = model.model_json_schema(by_alias=True, mode="validation")
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://agen.dev/spec/bundle/{name}.schema.json",
        "title": f"agen bundle: {what}",
        **{k: v for k, v in schema.items() if k != "title"},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def stale(spec_dir: Path = SPEC_DIR) -> list[str]:
    """Names of schemas whose committed file is missing or differs from the models."""
    return [
        name
        for name in SCHEMAS
        if not (spec_dir / f"{name}.schema.json").is_file()
        or (spec_dir / f"{name}.schema.json").read_text(encoding="utf-8") != render(name)
    ]


def write(spec_dir: Path = SPEC_DIR) -> list[Path]:
    spec_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for name in SCHEMAS:
        path = spec_dir / f"{name}.schema.json"
        path.write_text(render(name), encoding="utf-8")
        out.append(path)
    return out


def main(argv: list[str]) -> int:
    if "--check" in argv:
        names = stale()
        for name in names:
            print(
                f"spec/bundle/{name}.schema.json is stale; run python -m agen.bundle.schemas",
                file=sys.stderr,
            )
        return 1 if names else 0
    for path in write():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
