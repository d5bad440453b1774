"""Nest client certificates (mTLS, seed 000 §10) between real processes: `agen hub serve --tls` signs a
Nest's CSR at enrolment; Nest RPCs then need the credential *and* a live certificate of that same Nest;
renewal hands out a new one that replaces the old at its first use; revocation ends both."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest

from agen.hub.sealing import kek_from_env, unseal
from agen.nest.certs import new_key_and_csr
from tests.e2e.harness import Up, wait_until
from tests.e2e.test_nest_run import HELLO, Nest, _one_line_error

KEK = "mtls-test-key-encryption-key-0123456789abcdef"


class Cert:
    """A client certificate (with its key) in a file, as ssl loads it."""

    def __init__(self, path: Path, cert_pem: str, key_pem: str) -> None:
        path.write_text(cert_pem + key_pem)
        self.path = path

    @classmethod
    def copy(cls, path: Path, to: Path) -> Cert:
        """The certificate a Nest keeps in ``path``, as it is now."""
        return cls(to, path.read_text(), "")


def _post(
    hub: Up, method: str, body: dict[str, Any], token: str, cert: Cert | None = None
) -> httpx.Response:
    """A call to the TLS Hub (``method``, or a path such as /mcp) that trusts its CA alone and presents
    ``cert`` (or no certificate)."""
    ca = hub.local()["ca_hash"]
    ca_pem = httpx.get(f"{hub.url}/ca.pem", verify=False, timeout=10).text
    from agen.crypto.cahash import ca_hash_of

    assert ca_hash_of(ca_pem) == ca
    context = ssl.create_default_context(cadata=ca_pem)
    if cert is not None:
        context.load_cert_chain(cert.path)
    return httpx.post(
        hub.url + (method if method.startswith("/") else f"/v1/{method}"),
        json=body,
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        },
        verify=context,
        timeout=30,
    )


def _enrol(hub: Up, tmp: Path, name: str) -> tuple[dict[str, Any], Cert]:
    """EnrolNest by hand, as `agen nest run` does: a key made here, its CSR, the certificate back."""
    join = hub.json("join-token", "create")["token"]
    key_pem, csr = new_key_and_csr(name)
    r = _post(hub, "EnrolNest", {"name": name, "csr": csr}, join)
    assert r.status_code == 200, r.text
    body = r.json()
    return body, Cert(tmp / f"{name}.pem", body["certificate"], key_pem)


def _renew(hub: Up, tmp: Path, nest: dict[str, Any], cert: Cert, label: str) -> Cert:
    key_pem, csr = new_key_and_csr("x")
    r = _post(
        hub,
        "RenewNestCertificate",
        {"nest_id": nest["nest_id"], "csr": csr},
        nest["token"],
        cert,
    )
    assert r.status_code == 200, r.text
    return Cert(tmp / f"{label}.pem", r.json()["certificate"], key_pem)


def _error(r: httpx.Response) -> tuple[int, str]:
    return r.status_code, str(r.json()["error"]["message"])


def _hub_ca_signs(hub: Up, tmp: Path, name: str) -> Cert:
    """A certificate from the Hub's own CA (the key read from its store) that no enrolment made."""
    from cryptography import x509

    from agen.hub.tls import NestCa

    keys = dict(sqlite3.connect(hub.home / "agen.db").execute("SELECT name, value FROM hub_keys"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AGEN_HUB_KEK", KEK)
        ca_key = unseal("ca_key", keys["ca_key"], kek_from_env())
    ca = NestCa(keys["ca_cert"], ca_key, 3_600_000)
    key_pem, csr_pem = new_key_and_csr(name)
    csr = x509.load_pem_x509_csr(csr_pem.encode())
    return Cert(tmp / f"forged-{name}.pem", ca.sign(csr, nest_id="forged", name=name).pem, key_pem)


def _other_ca_signs(tmp: Path) -> Cert:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "another CA's nest")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return Cert(
        tmp / "other-ca.pem", cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem
    )


@pytest.fixture
def tls_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AGEN_HUB_KEK", KEK)
    hub = Up(tmp_path / "hub", command=("hub", "serve"), args=("--tls",)).start()
    monkeypatch.delenv("AGEN_HUB_KEK")  # Nests never hold the KEK
    try:
        yield hub
    finally:
        hub.stop()


def test_a_nest_enrolled_over_tls_runs_work_with_its_certificate_and_its_token_alone_is_refused(
    tls_hub: Up, tmp_path: Path
) -> None:
    hub = tls_hub
    hub.agen("deploy", str(HELLO))
    join = hub.json("join-token", "create")
    nest = Nest(
        hub, tmp_path / "n1", "n1", "--join-token", join["token"], "--ca-hash", join["ca_hash"]
    )
    try:
        ran = hub.agen("run", "hello", "over mTLS", "--timeout", "2m", timeout=150)
        assert "succeeded" in ran.stderr
        assert "client certificate (valid until" in nest.log.read_text()
        folder = tmp_path / "n1" / "nests" / "n1"
        assert (folder / "nest-cert.pem").stat().st_mode & 0o777 == 0o600
        cred = nest.credential
        held = Cert.copy(folder / "nest-cert.pem", tmp_path / "n1.pem")
        # The key was made by the Nest and never left it: no byte of it is in the Hub's store.
        key_body = (folder / "nest-cert.pem").read_text().split("-----BEGIN PRIVATE KEY-----")[1]
        key_line = key_body.strip().splitlines()[0]
        assert key_line.encode() not in b"".join(p.read_bytes() for p in hub.home.glob("agen.db*"))

        # Nest RPCs need the credential and the certificate: the token alone is refused, in one line.
        code, message = _error(_post(hub, "GetTokenKeys", {}, cred["token"]))
        assert code == 401 and "a bearer token alone is refused" in message
        tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}  # the MCP door: the same rule
        code, message = _error(_post(hub, "/mcp", tools, cred["token"]))
        assert code == 401 and "a bearer token alone is refused" in message
        assert _post(hub, "GetTokenKeys", {}, cred["token"], held).status_code == 200
        # A certificate of another CA does not get past the TLS handshake; the Hub serves on.
        with pytest.raises(httpx.TransportError):
            _post(hub, "GetTokenKeys", {}, cred["token"], _other_ca_signs(tmp_path))
        # One from the Hub's own CA that no enrolment issued names no Nest.
        forged = _hub_ca_signs(hub, tmp_path, "n1")
        code, message = _error(_post(hub, "GetTokenKeys", {}, cred["token"], forged))
        assert code == 401 and "is not one this Hub issued to an enrolled Nest" in message
        # Another enrolled Nest's certificate does not make this Nest's token good, nor the reverse.
        other, other_cert = _enrol(hub, tmp_path, "n2")
        code, message = _error(_post(hub, "GetTokenKeys", {}, cred["token"], other_cert))
        assert code == 403 and f"belongs to nest {other['nest_id']}" in message
        assert _post(hub, "GetTokenKeys", {}, other["token"], held).status_code == 403
        # API clients still call with a bearer token alone over the same TLS port.
        assert hub.http("ListNests").status_code == 200

        # Revoked: the Nest stops, and its certificate with its token is refused from then on.
        assert "certificates" in hub.agen("nests", "revoke", "n1").stdout
        assert nest.proc.wait(60) != 0 and "revoked" in nest.log.read_text()
        code, message = _error(_post(hub, "GetTokenKeys", {}, cred["token"], held))
        assert code == 401 and "revoked" in message
    finally:
        nest.stop()


def test_renewal_replaces_the_certificate_at_its_first_use_and_revocation_ends_both(
    tls_hub: Up, tmp_path: Path
) -> None:
    hub = tls_hub
    nest, a = _enrol(hub, tmp_path, "r1")
    token = nest["token"]
    assert _post(hub, "GetTokenKeys", {}, token, a).status_code == 200
    b = _renew(hub, tmp_path, nest, a, "b")  # suppose its reply was lost: the Nest still has a
    assert _post(hub, "GetTokenKeys", {}, token, a).status_code == 200
    c = _renew(hub, tmp_path, nest, a, "c")  # asked again with a: c replaces the unused b
    code, message = _error(_post(hub, "GetTokenKeys", {}, token, b))
    assert code == 401 and "superseded by a later renewal" in message
    assert _post(hub, "GetTokenKeys", {}, token, a).status_code == 200  # c not used yet
    assert _post(hub, "GetTokenKeys", {}, token, c).status_code == 200  # its first use...
    code, message = _error(_post(hub, "GetTokenKeys", {}, token, a))  # ...ends a
    assert code == 401 and "replaced by a renewed certificate" in message
    assert _post(hub, "GetTokenKeys", {}, token, c).status_code == 200
    events = [
        json.loads(d)
        for (d,) in sqlite3.connect(hub.home / "agen.db").execute(
            "SELECT data FROM events WHERE type = 'nest.certificate_renewed'"
        )
    ]
    assert [e["nest_id"] for e in events] == [nest["nest_id"]]

    d = _renew(hub, tmp_path, nest, c, "d")  # pending when the Nest is revoked: ends with it
    hub.agen("nests", "revoke", "r1")
    for cert in (c, d):
        code, message = _error(_post(hub, "GetTokenKeys", {}, token, cert))
        assert code == 401 and "revoked" in message


def test_a_running_nest_renews_when_little_of_its_certificate_remains_and_works_on(
    tls_hub: Up, tmp_path: Path
) -> None:
    hub = tls_hub
    hub.agen("deploy", str(HELLO))
    join = hub.json("join-token", "create")
    pin = ("--ca-hash", join["ca_hash"])
    nest = Nest(hub, tmp_path / "w", "w", "--join-token", join["token"], *pin)
    try:
        assert "succeeded" in hub.agen("run", "hello", "first", "--timeout", "2m").stderr
        assert nest.stop() == 0  # 30 days remain: more than the 10 days it renews at
        assert "certificate renewed" not in nest.log.read_text()
        path = tmp_path / "w" / "nests" / "w" / "nest-cert.pem"
        old = Cert.copy(path, tmp_path / "old.pem")
        token = nest.credential["token"]

        # Started again asking for more than the Hub's 30 days: it renews at once, over mTLS.
        nest = Nest(hub, tmp_path / "w", "w", *pin, "--cert-renew-before", "31d")
        wait_until(lambda: path.read_text() != old.path.read_text(), 60, "the renewed certificate")
        assert path.stat().st_mode & 0o777 == 0o600
        assert "succeeded" in hub.agen("run", "hello", "second", "--timeout", "2m").stderr
        log = nest.log.read_text()
        assert "certificate renewed, valid until" in log and "shorten --cert-renew-before" in log
        # The Nest used its new certificate, so the old one is refused.
        code, message = _error(_post(hub, "GetTokenKeys", {}, token, old))
        assert code == 401 and "replaced by a renewed certificate" in message
    finally:
        nest.stop()


def test_a_nest_enrolled_before_nest_certificates_is_told_to_enrol_again_and_can(
    tls_hub: Up, tmp_path: Path
) -> None:
    hub = tls_hub
    hub.agen("deploy", str(HELLO))
    join = hub.json("join-token", "create")
    pin = ("--ca-hash", join["ca_hash"])
    nest = Nest(hub, tmp_path / "old", "old", "--join-token", join["token"], *pin)
    wait_until(lambda: "runs up to" in nest.log.read_text(), 60, "the nest enrolled")
    assert nest.stop() == 0
    # What an older agen left: a credential without a certificate, and no certificate in the store.
    cred_file = tmp_path / "old" / "nests" / "old" / "nest.json"
    saved = json.loads(cred_file.read_text())
    cred_file.write_text(json.dumps({k: saved[k] for k in ("hub", "nest_id", "token")}))
    (tmp_path / "old" / "nests" / "old" / "nest-cert.pem").unlink()
    with sqlite3.connect(hub.home / "agen.db") as db:
        db.execute("DELETE FROM nest_certs")

    before = len(nest.log.read_text())
    refused = Nest(hub, tmp_path / "old", "old", *pin)
    assert refused.proc.wait(60) != 0
    assert _one_line_error(
        refused.log.read_text()[before:], "enrolled before this Hub issued Nest certificates"
    )
    again = hub.json("join-token", "create")["token"]
    nest = Nest(hub, tmp_path / "old", "old", *pin, "--join-token", again)
    try:
        assert "succeeded" in hub.agen("run", "hello", "back", "--timeout", "2m").stderr
        assert nest.credential["nest_id"] == saved["nest_id"]  # the same Nest, enrolled again
        assert "ca" in nest.credential
    finally:
        nest.stop()


def test_a_hub_without_tls_issues_no_certificate_and_takes_the_nest_token_alone(
    tmp_path: Path,
) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    try:
        join = hub.json("join-token", "create")["token"]
        _, csr = new_key_and_csr("plain")
        r = hub.http("EnrolNest", {"name": "plain", "csr": csr}, token=join)
        assert r.status_code == 200 and r.json()["certificate"] is None
        assert hub.http("GetTokenKeys", {}, token=r.json()["token"]).status_code == 200
        bad = hub.agen("hub", "serve", "--nest-cert-lifetime", "1h", check=False)
        assert bad.returncode != 0 and "add --tls" in bad.stderr
    finally:
        hub.stop()
