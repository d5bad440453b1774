"""The deployment log: instance starts, failures and exits, task releases, lease expiries."""

from __future__ import annotations

from agen.store import Tx


def write_log(
    tx: Tx,
    namespace: str,
    deployment: str,
    message: str,
    *,
    level: str = "info",
    instance_id: str | None = None,
) -> None:
    tx.execute(
        "INSERT INTO deployment_logs (namespace, deployment, instance_id, level, message, created_ms)"
        " VALUES (?,?,?,?,?,?)",
        (namespace, deployment, instance_id, level, message, tx.now_ms),
    )
