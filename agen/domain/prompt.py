"""The system prompt a bundle composes (agent.md's body, preloaded skills, the list of the others).

The engine sends it as the cacheable prefix of every model call; the Hub shows it in a run's
dry-run view. One rule for both, so it lives here, below both.
"""

from __future__ import annotations

from agen.bundle import Bundle


def system_prompt(
    bundle: Bundle,
    *,
    skills: list[str] | None = None,
    addendum: str | None = None,
    extra: list[str] | None = None,
) -> str:
    """agent.md's body, then each preloaded skill in full, then the others to load with load_skill."""
    allowed = set(skills) if skills is not None else None
    parts = [bundle.system_prompt]
    preload = [
        s
        for s in bundle.agent.preload_skills
        if s in bundle.skills and (allowed is None or s in allowed)
    ]
    for name in preload:
        parts.append(f"## Skill: {name}\n\n{bundle.skills[name].instructions}")
    others = [
        s
        for s in bundle.skills.values()
        if s.name not in preload and (allowed is None or s.name in allowed)
    ]
    if others:
        lines = [f"- {s.name}: {s.front_matter.description}" for s in others]
        parts.append("## Skills you can load with load_skill\n\n" + "\n".join(lines))
    parts.extend(extra or [])
    if addendum:
        parts.append(addendum)
    return "\n\n".join(p.strip() for p in parts if p and p.strip())
