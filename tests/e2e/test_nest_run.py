"""A Hub alone (`agen hub serve`) and a Nest in another process (`agen nest run`) enrolled by a join token."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.harness import AGEN, Up, wait_until

HELLO = Path(__file__).resolve().parents[2] / "bundles" / "hello"


class Nest:
    """One `agen nest run` process with its own AGEN_HOME."""

    def __init__(
        self,
        hub: Up,
        home: Path,
        name: str,
        *args: str,
        store: str | None = None,  # None: the Hub's own SQLite file; "": no --store at all
        more_hubs: tuple[Up, ...] = (),
    ) -> None:
        # The log sits beside the home, so `agen nest run` makes the home itself (as a user's would).
        self.home, self.name, self.log = home, name, home.with_name(f"{home.name}.log")
        home.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
        env["AGEN_HOME"] = str(home)
        store = f"sqlite:{hub.home / 'agen.db'}" if store is None else store
        cmd = [AGEN, "nest", "run", "--hub", hub.url, *(("--store", store) if store else ())]
        for other in more_hubs:
            cmd += ["--hub", other.url]
        if "--gateway-listen" not in args:  # the default 127.0.0.1:7071 is one per machine
            cmd += ["--gateway-listen", "off"]
        out = open(self.log, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen([*cmd, "--name", name, *args], env=env, stdout=out, stderr=out)

    @property
    def credential(self) -> dict[str, Any]:
        return dict(json.loads((self.home / "nests" / self.name / "nest.json").read_text()))

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


def _one_line_error(log: str, what: str) -> bool:
    """The process ended with one ``error: …`` line saying ``what``, and no traceback."""
    lines = [line for line in log.splitlines() if line.startswith("error:")]
    return "Traceback" not in log and len(lines) == 1 and what in lines[0]


def _nests(hub: Up) -> dict[str, Any]:
    return {n["name"]: n for n in hub.json("nests")["nests"]}


def test_a_nest_in_another_process_enrols_once_runs_work_and_holds_only_the_nest_scope(
    tmp_path: Path,
) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    nest: Nest | None = None
    try:
        hub.agen("deploy", str(HELLO))
        join = hub.json("join-token", "create", "--label", "zone=a")
        nest = Nest(
            hub, tmp_path / "nest", "n1", "--join-token", join["token"], "--label", "team=x"
        )
        wait_until(lambda: "n1" in _nests(hub), what="the nest enrolled")
        first = hub.agen("run", "hello", "hi from far", "--timeout", "2m")
        assert "succeeded" in first.stderr and "Hello!" in first.stdout  # run by the Nest: no other
        n1 = _nests(hub)["n1"]
        assert n1["state"] == "active" and n1["labels"] == {"zone": "a", "team": "x"}
        cred = nest.credential
        mode = (tmp_path / "nest" / "nests" / "n1" / "nest.json").stat().st_mode & 0o777
        assert mode == 0o600
        for folder in ("", "nests", "nests/n1"):  # the home and every folder in it: the user's only
            assert (tmp_path / "nest" / folder).stat().st_mode & 0o777 == 0o700, folder

        # The Nest's credential may do the Nest's work only: every admin, operator, approver and
        # viewer method is refused with a one-line 403, never a 5xx.
        from agen.api.registry import RPCS

        for method, rpc in RPCS.items():
            if rpc.scope in ("nest", "any", "join"):
                continue
            denied = hub.http(method, {}, token=cred["token"])
            assert denied.status_code == 403, (method, denied.text)
            message = denied.json()["error"]["message"]
            assert "\n" not in message and "nest" in message, (method, message)
        # The join token was used up, for another Nest process too.
        again = hub.http("EnrolNest", {"name": "n2"}, token=join["token"])
        assert again.status_code == 401 and "already used" in again.json()["error"]["message"]
        reused = Nest(hub, tmp_path / "n2", "n2", "--join-token", join["token"])
        assert reused.proc.wait(60) != 0
        assert _one_line_error(reused.log.read_text(), "already used")

        # Restarted without a join token, the Nest uses its saved credential.
        assert nest.stop() == 0
        nest = Nest(hub, tmp_path / "nest", "n1")
        assert "succeeded" in hub.agen("run", "hello", "again", "--timeout", "2m").stderr
        assert nest.credential == cred

        # Revoked, it stops and says why; its credential is refused from then on.
        assert "revoked" in hub.agen("nests", "revoke", "n1").stdout
        assert nest.proc.wait(60) != 0
        assert "revoked" in nest.log.read_text()
        assert _nests(hub)["n1"]["state"] == "revoked"
        # The fleet's own events (like nest.lost and leader.elected) are in the system namespace.
        fleet = hub.agen("events", "-n", "system", "--type", "nest.", "--json").stdout.splitlines()
        assert {"nest.join_token", "nest.enrolled", "nest.revoked"} <= {
            json.loads(line)["type"] for line in fleet
        }
        after = hub.http("RegisterNest", {"name": "n1"}, token=cred["token"])
        assert after.status_code == 401 and "revoked" in after.json()["error"]["message"]
        before = len(nest.log.read_text())
        restarted = Nest(hub, tmp_path / "nest", "n1")  # the same home: its saved credential
        assert restarted.proc.wait(60) != 0
        assert _one_line_error(restarted.log.read_text()[before:], "revoked")
    finally:
        if nest is not None:
            nest.stop()
        hub.stop()


def test_expired_join_tokens_and_user_tokens_cannot_enrol_a_nest(tmp_path: Path) -> None:
    hub = Up(tmp_path / "hub", command=("hub", "serve")).start()
    try:
        expired = hub.json("join-token", "create", "--ttl", "1ms")["token"]
        wait_until(
            lambda: hub.http("EnrolNest", {"name": "late"}, token=expired).status_code == 401,
            what="the join token expired",
        )
        late = hub.http("EnrolNest", {"name": "late"}, token=expired).json()["error"]["message"]
        assert "expired" in late
        nest = Nest(hub, tmp_path / "late", "late", "--join-token", expired)
        assert nest.proc.wait(60) != 0
        assert _one_line_error(nest.log.read_text(), "expired")
        admin = hub.http("EnrolNest", {"name": "sneaky"})
        assert admin.status_code == 403 and "join token" in admin.json()["error"]["message"]
        nest_scope = hub.http("CreateToken", {"scopes": ["nest"]})
        assert nest_scope.status_code == 400  # no API token can hold the nest scope
        assert "nest" not in {n for n in _nests(hub)}
        r = httpx.get(f"{hub.url}/health", timeout=5)
        assert r.status_code == 200
    finally:
        hub.stop()


def test_over_tls_a_nest_enrols_only_with_the_hub_whose_ca_it_pinned(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", "k" * 8 + "a-long-random-key-encryption-key-for-tests")
    hub = Up(tmp_path / "hub", command=("hub", "serve"), args=("--tls",)).start()
    monkeypatch.delenv("AGEN_HUB_KEK")  # the Nest and the CLI never hold the KEK
    nests: list[Nest] = []
    try:
        pinned = hub.local()["ca_hash"]
        assert pinned.startswith("sha256:") and hub.url.startswith("https://")
        hub.agen("deploy", str(HELLO))  # the CLI pins the CA from local.json
        join = hub.json("join-token", "create")
        assert join["ca_hash"] == pinned

        wrong = "sha256:" + "0" * 64
        bad = Nest(hub, tmp_path / "bad", "bad", "--join-token", join["token"], "--ca-hash", wrong)
        nests.append(bad)
        assert bad.proc.wait(60) != 0
        # refused before the token was sent, in one line
        assert _one_line_error(bad.log.read_text(), f"not the pinned {wrong}")

        good = Nest(
            hub, tmp_path / "good", "good", "--join-token", join["token"], "--ca-hash", pinned
        )
        nests.append(good)
        assert (
            "succeeded"
            in hub.agen("run", "hello", "over tls", "--timeout", "2m", timeout=150).stderr
        )

        denied = hub.agen("nests", check=False, env_extra={"AGEN_CA_HASH": wrong})
        assert denied.returncode != 0 and "not the pinned" in denied.stderr

        stored = dict(
            sqlite3.connect(hub.home / "agen.db")
            .execute("SELECT name, value FROM hub_keys")
            .fetchall()
        )
        assert stored["ca_key"].startswith("sealed:v1:")  # the CA key is sealed under the KEK
        raw = b"".join(p.read_bytes() for p in hub.home.glob("agen.db*"))
        assert b"PRIVATE KEY" not in raw
    finally:
        for nest in nests:
            nest.stop()
        hub.stop()


def test_hub_serve_on_port_0_prints_the_port_it_got_and_speaks_in_its_own_name(
    tmp_path: Path,
) -> None:
    """`--listen 127.0.0.1:0` lets the kernel pick a free port; the Hub prints the URL it got,
    writes it to local.json, answers there, and its drain lines say `agen hub serve`."""
    home = tmp_path / "hub"
    home.mkdir()
    log = home / "hub.log"
    env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
    env["AGEN_HOME"] = str(home)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [AGEN, "hub", "serve", "--listen", "127.0.0.1:0"], env=env, stdout=out, stderr=out
        )
    try:
        line = wait_until(
            lambda: next(
                (x for x in log.read_text().splitlines() if "Hub at http://127.0.0.1:" in x), None
            ),
            what="the Hub's address line",
        )
        url = line.split("Hub at ", 1)[1].split(" ", 1)[0]
        assert not url.endswith(":0")
        assert json.loads((home / "local.json").read_text())["url"] == url
        assert httpx.get(url + "/health", timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    text = log.read_text()
    assert line.startswith("agen hub serve: Hub at"), text
    assert "agen hub serve: draining" in text and "agen hub serve: stopped" in text, text
    assert "agen up:" not in text, text
