"""Platform secret RPCs: SetSecret, ListSecrets, DeleteSecret (admin) and GetPlatformSecrets (a Nest).

Values only go in through the admin RPCs; the one way out is GetPlatformSecrets, for a Nest credential
and a deployment assigned to that Nest (or with a live instance there, such as one draining).
"""

from __future__ import annotations

from agen.domain import DeploymentRef, columns
from agen.errors import DeniedError, NotFoundError
from agen.hub import platform_secrets as ps
from agen.hub.auth import Principal
from agen.hub.sealing import kek_from_env
from agen.hub.service import Hub
from agen.store import Tx
from agen.wire.common import Ok
from agen.wire.secrets import (
    DeleteSecretRequest,
    GetPlatformSecretsRequest,
    GetPlatformSecretsResponse,
    ListSecretsRequest,
    ListSecretsResponse,
    SecretRow,
    SetSecretRequest,
    SetSecretResponse,
)


def _row(info: ps.SecretInfo) -> SecretRow:
    return SecretRow(
        namespace=info.namespace,
        name=info.name,
        grants=info.grants,
        sealed=info.sealed,
        created_ms=info.created_ms,
        updated_ms=info.updated_ms,
        updated_by=info.updated_by,
    )


async def set_secret(hub: Hub, p: Principal, req: SetSecretRequest) -> SetSecretResponse:
    p.require_namespace(req.namespace)
    kek = kek_from_env()
    info = await hub.store.write(
        lambda tx: ps.set_secret(
            tx, req.namespace, req.name, req.value, grants=req.grants, by=p.subject, kek=kek
        )
    )
    return SetSecretResponse(secret=_row(info))


async def list_secrets(hub: Hub, p: Principal, req: ListSecretsRequest) -> ListSecretsResponse:
    p.require_namespace(req.namespace)
    infos = await hub.store.read(lambda tx: ps.list_secrets(tx, req.namespace))
    return ListSecretsResponse(secrets=[_row(i) for i in infos])


async def delete_secret(hub: Hub, p: Principal, req: DeleteSecretRequest) -> Ok:
    p.require_namespace(req.namespace)
    await hub.store.write(lambda tx: ps.delete_secret(tx, req.namespace, req.name))
    return Ok(message=f"secret {req.name} removed from namespace {req.namespace}")


async def get_platform_secrets(
    hub: Hub, p: Principal, req: GetPlatformSecretsRequest
) -> GetPlatformSecretsResponse:
    """The values a Nest needs to start an instance of one of its deployments: its scope ``nest``
    is held by a Nest's credential only (no user token, admin included, ever receives a value)."""
    if p.nest_id is not None and p.nest_id != req.nest_id:
        raise DeniedError(
            f"this Nest credential belongs to nest {p.nest_id}; it cannot read secrets for nest "
            f"{req.nest_id}",
            nest_id=req.nest_id,
        )
    kek = kek_from_env()

    def fn(tx: Tx) -> dict[str, str]:
        dep = tx.row(
            DeploymentRef,
            f"SELECT {columns(DeploymentRef)} FROM deployments WHERE id = ?",
            (req.deployment_id,),
        )
        if dep is None:
            raise NotFoundError(
                f"deployment {req.deployment_id} does not exist", deployment_id=req.deployment_id
            )
        runs_here = tx.scalar(
            "SELECT 1 FROM assignments WHERE deployment_id = ? AND nest_id = ? UNION ALL"
            " SELECT 1 FROM instances WHERE deployment_id = ? AND nest_id = ?"
            " AND state NOT IN ('stopped', 'failed')",
            (req.deployment_id, req.nest_id, req.deployment_id, req.nest_id),
        )
        if runs_here is None:
            raise DeniedError(
                f"deployment {dep.namespace}/{dep.name} is not assigned to nest {req.nest_id}; "
                "a Nest reads only the secrets of deployments it runs",
                nest_id=req.nest_id,
                deployment_id=req.deployment_id,
            )
        return ps.values_for_deployment(tx, dep, kek)

    return GetPlatformSecretsResponse(values=await hub.store.read(fn))
