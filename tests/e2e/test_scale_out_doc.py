"""docs/scale-out.md, followed step by step as a new user would: every ``sh`` block marked
``<!-- doc-test: NAME -->`` runs as written (in a fresh HOME, on a free port), in order, and each
command's ``# prints X`` comment must show in its output, so the page and the product cannot drift.

``agen hub serve`` and ``agen nest run`` keep running (another terminal): they start in the
background and their ``# prints`` must appear in their output. Placeholders the page shows as
``agen_…`` and ``sha256:9f2c…`` become the join token and the CA hash printed before them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.harness import AGEN, wait_until
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "scale-out.md"
BLOCK = re.compile(r"<!-- doc-test: (?P<name>[^>]+?) -->\s*```sh\n(?P<body>.*?)```", re.S)
BACKGROUND = ("agen hub serve", "agen nest run")


@dataclass
class Step:
    command: str
    prints: str | None  # the ``# prints X`` comment: X shows in the output ("…" ends a prefix)


def doc_blocks() -> dict[str, list[Step]]:
    """The marked blocks of the page, each as its commands (continuations joined, comments off)."""
    blocks: dict[str, list[Step]] = {}
    for match in BLOCK.finditer(DOC.read_text()):
        steps: list[Step] = []
        for line in match["body"].replace("\\\n", " ").splitlines():
            command, _, comment = line.partition("  #")
            command = command.strip()
            if not command or command.startswith("#"):
                continue
            said = comment.strip()
            prints = (
                said.removeprefix("prints ").rstrip("…") if said.startswith("prints ") else None
            )
            steps.append(Step(" ".join(command.split()), prints))
        blocks[match["name"]] = steps
    return blocks


@dataclass
class Shell:
    """A user's shell: HOME is a fresh folder, exports carry to later commands."""

    home: Path
    port: int
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
        if token := re.search(r"\bagen_[A-Za-z0-9_-]{16,}", output):
            self.seen["agen_…"] = token.group(0)
        if ca := re.search(r"sha256:[0-9a-f]{64}", output):
            self.seen["sha256:9f2c…"] = ca.group(0)

    def run(self, step: Step) -> None:
        command = self.expand(step.command)
        if step.prints is not None:
            step = Step(command, step.prints.replace("7070", str(self.port)))
        if command.startswith("export "):
            name = command.removeprefix("export ").split("=", 1)[0]
            value = subprocess.run(
                ["bash", "-c", f'{command}; printf %s "${name}"'],
                env=self.env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert value, command
            self.env[name] = value
            return
        if any(b in command for b in BACKGROUND):
            log = self.home / f"background-{len(self.background)}.log"
            out = open(log, "ab")  # noqa: SIM115 - owned by the child
            proc = subprocess.Popen(
                ["bash", "-c", command],
                env=self.env,
                cwd=ROOT,
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
            return
        r = subprocess.run(
            ["bash", "-c", command],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        output = r.stdout + r.stderr
        assert r.returncode == 0, f"{command} exited {r.returncode}: {output}"
        self.learn(output)
        if step.prints is not None:
            assert step.prints in output, f"{command} did not print {step.prints!r}: {output}"

    def stop(self) -> None:
        for proc, _ in reversed(self.background):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def test_the_page_has_its_walkthroughs_marked() -> None:
    blocks = doc_blocks()
    assert set(blocks) == {"one machine", "over TLS"}
    assert all(any(s.prints for s in steps) for steps in blocks.values())


@pytest.mark.parametrize("name", ["one machine", "over TLS"])
def test_scale_out_doc_walkthrough_runs_as_written(name: str, tmp_path: Path) -> None:
    shell = Shell(tmp_path, free_port())
    try:
        for step in doc_blocks()[name]:
            shell.run(step)
    finally:
        shell.stop()
