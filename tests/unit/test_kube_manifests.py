"""deploy/kube/ validates against the Kubernetes JSON schemas (kubernetes-validate, strict: no unknown
field passes), keeps the Hub and the Nests apart, and passes only flags the agen CLI has."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.e2e.harness import AGEN

KUBE = Path(__file__).resolve().parents[2] / "deploy" / "kube"


def _docs() -> list[dict[str, Any]]:
    return [d for f in sorted(KUBE.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]


def _by(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    [doc] = [
        d
        for d in _docs()
        if d["kind"] == kind
        and d["metadata"]["name"] == name
        and d["metadata"].get("namespace") == namespace
    ]
    return doc


def _flags(*path: str) -> set[str]:
    """Every option ``agen <path> --help`` lists (the CLI itself, in its own process)."""
    out = subprocess.run(
        [AGEN, *path, "--help"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out))


def test_every_manifest_is_valid_against_the_kubernetes_schemas() -> None:
    version = kubernetes_validate.latest_version()
    docs = _docs()
    assert len(docs) >= 8
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)
    typo = _by("Deployment", "agen-hub", "agen")
    typo["spec"]["replicaz"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):  # the check has teeth
        kubernetes_validate.validate(typo, version, strict=True)


def test_the_hub_and_the_nests_run_apart_and_the_nests_never_hold_the_kek() -> None:
    hub = _by("Deployment", "agen-hub", "agen")
    nest = _by("StatefulSet", "agen-nest", "agen-nests")
    assert hub["spec"]["replicas"] >= 2  # several Hubs on one database
    assert _by("Secret", "agen-store", "agen")["stringData"].keys() == {
        "AGEN_STORE",
        "AGEN_HUB_KEK",
    }
    assert _by("Secret", "agen-store", "agen-nests")["stringData"].keys() == {"AGEN_STORE"}
    [container] = nest["spec"]["template"]["spec"]["containers"]
    assert "AGEN_HUB_KEK" not in str(container)
    assert {v["metadata"]["name"] for v in nest["spec"]["volumeClaimTemplates"]} == {
        "home"
    }  # the credential


def test_the_manifests_pass_only_flags_the_cli_has() -> None:
    [hub] = _by("Deployment", "agen-hub", "agen")["spec"]["template"]["spec"]["containers"]
    assert hub["args"][:2] == ["hub", "serve"]
    used = {a for a in hub["args"] if a.startswith("--")}
    assert used and used <= _flags("hub", "serve"), used - _flags("hub", "serve")

    [nest] = _by("StatefulSet", "agen-nest", "agen-nests")["spec"]["template"]["spec"]["containers"]
    script = " ".join(nest["args"])
    run = re.search(r"exec (agen nest run .*)", script)
    assert run is not None, script
    words = shlex.split(run.group(1))
    used = {w for w in words if w.startswith("--")}
    assert used and used <= _flags("nest", "run"), used - _flags("nest", "run")
    assert "--ca-hash" in _flags("nest", "run")  # AGEN_CA_HASH from the ConfigMap pins the CA
