"""The sandbox's cost per command: the built-in run tool's `true`, unconfined and under bubblewrap.

Each command goes through agen.mcpservers._shell.run_command as the workspace run tool starts it
(its own session, output pipe, the scope's mark); the sandboxed ones are wrapped by
agen.runner.sandboxing (bwrap with the default policy and limits), once with no network and once
with an allowed host, which adds the egress proxy's bridge (a Python started inside the sandbox).
Baseline in the same run: the same command unconfined. Median and p95 of --repeat.

    python -m scripts.bench.sandbox_bench [--repeat 50] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

from scripts.bench._util import machine, median, pct


async def _times(repeat: int, box: Any, workspace: str) -> list[float]:
    from agen.mcpservers._shell import new_scope, run_command, stop_scope
    from agen.sandbox.bwrap import Launch
    from agen.sandbox.limits import apply_limits

    scope = new_scope()
    out: list[float] = []
    kw: dict[str, Any] = {}
    if box is not None:
        await box.prepare()
        where = Launch(workspace=workspace, cwd=workspace)
        limits = box.policy.limits
        kw = {
            "env": box.environment({"PATH": "/usr/bin:/bin"}),
            "wrap": lambda argv: box.command(argv, where),
            "preexec_fn": lambda: apply_limits(limits),
        }
    else:
        kw = {"env": {"PATH": "/usr/bin:/bin"}}
    for _ in range(repeat):
        start = time.perf_counter()
        result = await run_command("true", workspace, 60, scope=scope, **kw)
        out.append((time.perf_counter() - start) * 1000)
        assert result.exit_code == 0, result.output
    stop_scope(scope)
    if box is not None:
        await box.close()
    return out


async def measure(repeat: int) -> dict[str, Any]:
    from agen.bundle.sandbox import Sandbox
    from agen.runner.sandboxing import Sandboxing, run_policy

    with tempfile.TemporaryDirectory() as workspace:
        plain = await _times(repeat, None, workspace)
        policy = run_policy(Sandbox())
        assert policy is not None
        boxed = await _times(repeat, Sandboxing(policy, "bench"), workspace)
        net = run_policy(Sandbox.model_validate({"network": {"allow": ["example.org"]}}))
        assert net is not None
        bridged = await _times(repeat, Sandboxing(net, "bench"), workspace)
    return {
        "machine": machine(),
        "repeat": repeat,
        "unconfined_p50_ms": median(plain),
        "unconfined_p95_ms": pct(plain, 95),
        "sandboxed_p50_ms": median(boxed),
        "sandboxed_p95_ms": pct(boxed, 95),
        "sandboxed_network_p50_ms": median(bridged),
        "sandboxed_network_p95_ms": pct(bridged, 95),
    }


def run(repeat: int = 50) -> dict[str, Any]:
    return asyncio.run(measure(repeat))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    r = run(args.repeat)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print(
        f"run tool `true`, p50 / p95 over {r['repeat']}: unconfined {r['unconfined_p50_ms']:.1f} / "
        f"{r['unconfined_p95_ms']:.1f} ms; sandboxed {r['sandboxed_p50_ms']:.1f} / "
        f"{r['sandboxed_p95_ms']:.1f} ms; sandboxed with network (bridge) "
        f"{r['sandboxed_network_p50_ms']:.1f} / {r['sandboxed_network_p95_ms']:.1f} ms"
    )


if __name__ == "__main__":
    main()
