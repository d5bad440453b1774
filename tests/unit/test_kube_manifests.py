"""deploy/kube/ validates against the Kubernetes JSON schemas (kubernetes-validate, strict: no unknown
field passes), keeps the Hub and the Nests apart, and passes only flags the agen CLI has."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
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


def _pod_specs() -> list[tuple[str, dict[str, Any]]]:
    return [
        (d["metadata"]["name"], d["spec"]["template"]["spec"])
        for d in _docs()
        if d["kind"] in {"Deployment", "StatefulSet"}
    ]


def test_every_pod_meets_the_restricted_pod_security_standard() -> None:
    """The pods run agent code: no service account token, no capabilities, no escalation, the
    runtime's seccomp profile, requests and limits, probes, and an image pinned to this version."""
    version = tomllib.loads((KUBE.parents[1] / "pyproject.toml").read_text())["project"]["version"]
    specs = _pod_specs()
    assert {name for name, _ in specs} == {"agen-hub", "agen-nest"}
    for name, spec in specs:
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for c in spec["containers"]:
            ctx = c["securityContext"]
            assert ctx["allowPrivilegeEscalation"] is False, name
            assert ctx["capabilities"] == {"drop": ["ALL"]}, name
            assert ctx["readOnlyRootFilesystem"] is True, name
            assert {"requests", "limits"} <= c["resources"].keys(), name
            assert {"livenessProbe", "readinessProbe"} <= c.keys(), name
            assert c["image"] == f"agen:{version}", name


def test_the_nest_statefulset_names_a_headless_service_and_no_one_connects_into_a_nest() -> None:
    nest = _by("StatefulSet", "agen-nest", "agen-nests")
    service = _by("Service", nest["spec"]["serviceName"], "agen-nests")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == nest["spec"]["selector"]["matchLabels"]
    policy = _by("NetworkPolicy", "agen-nest-no-ingress", "agen-nests")
    assert policy["spec"]["podSelector"] == {} and "ingress" not in policy["spec"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    hub = _by("NetworkPolicy", "agen-hub", "agen")
    assert hub["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": 7070}]}]
