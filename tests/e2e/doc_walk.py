"""A docs page followed step by step as a new user would (docs/scale-out.md, docs/eval.md).

Every ``sh`` block marked ``<!-- doc-test: NAME -->`` runs as written, in a fresh HOME, one command
(line) at a time, exports carried to later ones. A command's comment says what to check:
``# prints X`` (X shows in its output; a trailing "…" ends a prefix), ``# exits N`` (its exit code,
default 0), or both (``# exits 1, prints X``). Commands that keep running (``agen up``, ``agen hub
serve``, ``agen nest run``) start in the background and must print their X. Placeholders (a value
the page shows with "…") become what an earlier command printed, by ``Shell.learns``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.harness import AGEN, wait_until

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- doc-test: (?P<name>[^>]+?) -->\s*```sh\n(?P<body>.*?)```", re.S)
BACKGROUND = ("agen hub serve", "agen nest run", "agen up")
COMMENT = re.compile(r"^(?:exits (?P<exits>\d+))?(?:,?\s*)?(?:prints (?P<prints>.*))?$")


@dataclass
class Step:
    command: str
    prints: str | None  # the ``# prints X`` comment: X shows in the output ("…" ends a prefix)
    exits: int = 0


def doc_blocks(doc: Path) -> dict[str, list[Step]]:
    """The marked blocks of the page, each as its commands (continuations joined, comments off)."""
    blocks: dict[str, list[Step]] = {}
    for match in BLOCK.finditer(doc.read_text()):
        steps: list[Step] = []
        for line in match["body"].replace("\\\n", " ").splitlines():
            command, _, comment = line.partition("  #")
            command = command.strip()
            if not command or command.startswith("#"):
                continue
            said = COMMENT.match(comment.strip())
            prints = exits = None
            if said is not None:
                prints = said["prints"].rstrip("…") if said["prints"] else None
                exits = said["exits"]
            steps.append(Step(" ".join(command.split()), prints, int(exits or 0)))
        blocks[match["name"]] = steps
    return blocks


@dataclass
class Shell:
    """A user's shell: HOME is a fresh folder, exports carry to later commands. ``learns``: a
    placeholder the page shows, and the pattern whose first group (or match) in an output replaces it."""

    home: Path
    port: int
    learns: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)  # placeholder -> the value printed
    background: list[tuple[subprocess.Popen[bytes], Path]] = field(default_factory=list)

    def __post_init__(self) -> None:
        keep = {k: v for k, v in os.environ.items() if not k.startswith("AGEN_")}
        self.env = {**keep, "HOME": str(self.home), "PATH": f"{Path(AGEN).parent}:{keep['PATH']}"}

    def expand(self, command: str) -> str:
        command = command.replace("7070", str(self.port)).replace("0.0.0.0", "127.0.0.1")
        command = command.replace("hub.example.lan", "localhost")
        for placeholder, value in self.seen.items():
            command = command.replace(placeholder, value)
        assert "…" not in command, f"a placeholder nothing printed yet: {command}"
        return command

    def learn(self, output: str) -> None:
        for placeholder, pattern in self.learns.items():
            if found := re.search(pattern, output):
                self.seen[placeholder] = found.group(found.lastindex or 0)

    def run(self, step: Step, cwd: Path = ROOT) -> str:
        command = self.expand(step.command)
        if step.prints is not None:
            step = Step(command, step.prints.replace("7070", str(self.port)), step.exits)
        if command.startswith("export "):
            name = command.removeprefix("export ").split("=", 1)[0]
            value = subprocess.run(
                ["bash", "-c", f'{command}; printf %s "${name}"'],
                env=self.env,
                cwd=cwd,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert value, command
            self.env[name] = value
            return value
        if any(command.startswith(b) or f" {b}" in command for b in BACKGROUND):
            log = self.home / f"background-{len(self.background)}.log"
            out = open(log, "ab")  # noqa: SIM115 - owned by the child
            proc = subprocess.Popen(
                ["bash", "-c", command],
                env=self.env,
                cwd=cwd,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
            self.background.append((proc, log))

            def printed() -> bool:
                text = log.read_text()
                assert proc.poll() is None, f"{command} exited {proc.returncode}: {text}"
                self.learn(text)
                return step.prints is None or step.prints in text

            wait_until(printed, 60, f"{command!r} to print {step.prints!r}")
            return log.read_text()
        r = subprocess.run(
            ["bash", "-c", command],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
        )
        output = r.stdout + r.stderr
        assert r.returncode == step.exits, f"{command} exited {r.returncode}: {output}"
        self.learn(output)
        if step.prints is not None:
            assert step.prints in output, f"{command} did not print {step.prints!r}: {output}"
        return output

    def stop(self) -> None:
        for proc, _ in reversed(self.background):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
