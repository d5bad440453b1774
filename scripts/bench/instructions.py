"""Instructions per task of the in-process pipeline, counted by callgrind: an A/B figure the load of
other processes on a shared machine cannot move (wall and CPU time both can; see docs/performance.md).

The in-process Tasks run of task_bench (Hub + local Nest, one fake-model turn a task) under
``valgrind --tool=callgrind``, with instrumentation switched on only while its tasks are submitted
and run (``callgrind_control -i on/off``), so start-up, imports and the drain are not counted.
Threads are counted apart: the event loop (thread 1) and the Store's writer and readers (the rest).
Valgrind runs the threads one at a time, so group-commit batches are larger than in a real run (and
vary from run to run with the interleaving: runs of one tree differ by up to ~10 %, so compare
several), and it counts a ``rep stos``/``rep movs`` (memset, memcpy) once per byte: compare two
trees with it, not its absolute numbers with a wall-clock run.

    python -m scripts.bench.instructions [--n 300]          # this tree
    (cd other-tree && python -m scripts.bench.instructions)  # the tree to compare with
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


class _Window:
    """Stands in for task_bench's statement recorder: its ``on`` switches callgrind's counting."""

    def __init__(self) -> None:
        self._on = False

    @property
    def on(self) -> bool:
        return self._on

    @on.setter
    def on(self, value: bool) -> None:
        self._on = value
        subprocess.run(
            ["callgrind_control", "-i", "on" if value else "off", str(os.getpid())],
            stdout=subprocess.DEVNULL,
            check=False,
        )


def child(n: int) -> None:
    from scripts.bench import task_bench

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["AGEN_HOME"] = str(tmp / "home")
        result = asyncio.run(task_bench.in_process(tmp, n, 2, 256, _Window()))  # type: ignore[arg-type]
    if result["succeeded"] != n:
        sys.exit(f"only {result['succeeded']} of {n} tasks succeeded")


def _total(path: Path) -> int:
    out = subprocess.run(
        ["callgrind_annotate", str(path)], capture_output=True, text=True, check=False
    ).stdout
    m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", out, re.MULTILINE)
    return int(m.group(1).replace(",", "")) if m else 0


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--n", type=int, default=300, help="tasks (about a minute each 100 under valgrind)"
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.n)
        return
    missing = [
        t for t in ("valgrind", "callgrind_control", "callgrind_annotate") if not shutil.which(t)
    ]
    if missing:
        sys.exit(f"needs {', '.join(missing)} (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as d:
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--separate-threads=yes",
            f"--callgrind-out-file={d}/cg.%p",
            sys.executable,
            "-m",
            "scripts.bench.instructions",
            "--child",
            "--n",
            str(args.n),
        ]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            sys.exit(f"the run under valgrind failed:\n{run.stderr[-2000:]}")
        files = sorted(Path(d).glob("cg.*-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
        counts = [_total(p) for p in files]
    if not counts:
        sys.exit("callgrind wrote no per-thread counts")
    loop, others = counts[0], sum(counts[1:])
    print(
        f"{args.n} tasks in-process: {(loop + others) / args.n:,.0f} instructions per task "
        f"(event loop {loop / args.n:,.0f}, Store writer and readers {others / args.n:,.0f}; "
        f"by thread: {', '.join(f'{c / args.n:,.0f}' for c in counts)})"
    )


if __name__ == "__main__":
    main()
