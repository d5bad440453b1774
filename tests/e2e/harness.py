"""Real `agen up` processes on free loopback ports, driven only through the CLI and HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.ports import free_port

# The `agen` console script of the environment running the tests (a CI clone's own .venv),
# never one found elsewhere on the machine.
AGEN = str(Path(sys.executable).with_name("agen"))


def streamer_bundle(root: Path, base_url: str) -> Path:
    """A one-instance bundle named ``streamer`` whose model is the OpenAI-compatible server at
    ``base_url`` (a stub that streams slowly or holds its stream: what `agen run` shows while the
    answer is still coming)."""
    files = {
        "plugin.json": {"name": "streamer", "version": "0.1.0"},
        "x-agen/agent.md": "---\nname: streamer\n---\nYou answer.\n",
        "x-agen/harness.json": {"provider": "openai", "model": "m", "baseUrl": base_url},
        "x-agen/config.json": {"kind": "pool", "scale": {"min": 1, "max": 1}},
    }
    for path, value in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))
    return root


class Up:
    """One `agen up --headless` on its own AGEN_HOME; the CLI finds it through local.json."""

    def __init__(
        self,
        home: Path,
        port: int | None = None,
        args: tuple[str, ...] = (),
        command: tuple[str, ...] = ("up", "--headless"),
    ) -> None:
        self.home = home
        self.args = args
        self.command = command
        self.port = port or free_port()
        scheme = (
            "https" if "--tls" in args else "http"
        )  # a TLS Hub: its CA is pinned from local.json
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = home / "up.log"
        # `agen up` runs an A2A Gateway too: on its own free port, so parallel tests never share one.
        self.gateway_port = free_port() if command[0] == "up" else None
        self.gateway_url = f"http://127.0.0.1:{self.gateway_port}" if self.gateway_port else None

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
        env["AGEN_HOME"] = str(self.home)
        return env

    def start(self, timeout_s: float = 20) -> Up:
        # 0700, as agen makes a home: a looser one is warned about in the log the tests read
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        out = open(self.log, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [
                AGEN,
                *self.command,
                "--listen",
                f"127.0.0.1:{self.port}",
                *(
                    ("--gateway-listen", f"127.0.0.1:{self.gateway_port}")
                    if self.gateway_port
                    else ()
                ),
                *self.args,
            ],
            env=self.env,
            stdout=out,
            stderr=out,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"agen up exited {self.proc.returncode}: {self.log.read_text()}"
                )
            try:
                if (
                    httpx.get(self.url + "/health", timeout=0.5, verify=False).status_code == 200
                    and self.local().get("url") == self.url
                ):
                    return self
            except (httpx.HTTPError, OSError, ValueError):
                pass
            time.sleep(0.1)
        raise AssertionError(f"agen up did not come up: {self.log.read_text()}")

    def wait_gateway(self, timeout_s: float = 60) -> str:
        """The A2A Gateway's URL once it answers (it starts after the node, behind the Hub's API)."""
        assert self.gateway_url is not None, "only `agen up` runs a Gateway"
        url = self.gateway_url

        def answers() -> bool:
            try:
                return httpx.get(url + "/health", timeout=0.5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(answers, timeout_s, "the A2A Gateway")
        return url

    def local(self) -> dict[str, Any]:
        return dict(json.loads((self.home / "local.json").read_text()))

    def agen(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 60,
        env_extra: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **(env_extra or {})}
        r = subprocess.run([AGEN, *args], env=env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(
                f"agen {' '.join(args)} exited {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
            )
        return r

    def json(self, *args: str) -> Any:
        """The command's --json result; exit 8 (the task is still waiting) still carries one."""
        r = self.agen(*args, "--json", check=False)
        if r.returncode not in (0, 8):
            raise AssertionError(
                f"agen {' '.join(args)} exited {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
            )
        return json.loads(r.stdout)

    def http(
        self, method: str, body: dict[str, Any] | None = None, token: str | None = None
    ) -> httpx.Response:
        token = token or self.local()["token"]
        return httpx.post(
            f"{self.url}/v1/{method}",
            json=body or {},
            timeout=30,
            headers={"Authorization": f"Bearer {token}"},
            verify=False,  # the test talks to its own Hub; pinning is tested through the CLI
        )

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_until(check: Any, timeout_s: float = 30, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
