"""The real askgate under test: ``askgate serve`` (``ASKGATE_BIN``, else
``askgate`` on ``PATH``) on a free loopback port with its own data
directory, and the person on the other side: the web page's own JSON API
(``/web/{key}/api/...``), which the page's script uses to answer and skip.

The configuration is the Rust suites' (``tests/e2e/support/mod.rs``): agent
``one`` may ask everybody, agent ``solo`` only ``me``, recipients ``me`` and
``other`` on the web page with fixed keys.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

AGENT_TOKEN = "svc-test-agent-one-0123456789abcdefghijklmn"
SOLO_TOKEN = "svc-test-agent-solo-0123456789abcdefghijklmn"
ME_KEY = "svc-test-web-key-me-0123456789abcdefghijklmnop"
OTHER_KEY = "svc-test-web-key-other-0123456789abcdefghijklm"

#: How long askgate may take to become ready, and a condition to come true.
STARTUP_TIMEOUT = 30.0
POLL_TIMEOUT = 15.0


def askgate_binary() -> str:
    """The binary under test; the suite fails (never skips) without one."""
    configured = os.environ.get("ASKGATE_BIN")
    found = configured or shutil.which("askgate")
    if not found or not Path(found).exists():
        pytest.fail(f"no askgate binary: set ASKGATE_BIN (now {configured!r}) or put askgate on PATH", pytrace=False)
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def config_text(port: int, data_dir: Path) -> str:
    return f"""[server]
listen = "127.0.0.1:{port}"
data_dir = "{data_dir}"
ask_keepalive_seconds = 1

[agents.one]
token = "{AGENT_TOKEN}"
recipients = ["*"]

[agents.solo]
token = "{SOLO_TOKEN}"
recipients = ["me"]

[channels.web]
type = "web"

[recipients.me]
channel = "web"
display_name = "Me"
locale = "en"
web_key = "{ME_KEY}"

[recipients.other]
channel = "web"
web_key = "{OTHER_KEY}"
"""


class Askgate:
    """One ``askgate serve``: started, killed hard and started again on the
    same port, configuration and data directory."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.config = directory / "askgate.toml"
        self.config.write_text(config_text(self.port, directory / "data"))
        self.log = directory / "askgate.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.base_url, timeout=10)

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "serve", "--config", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"askgate exited ({self.process.returncode}) at start:\n{self.log_text()}")
            try:
                if self.http.get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"askgate was not ready within {STARTUP_TIMEOUT} s:\n{self.log_text()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """``kill -9``, and reaped."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.http.close()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    # The person, on the web page of recipient `me` (or `key`'s).

    def pending_on_page(self, count: int = 1, key: str = ME_KEY) -> list[dict[str, Any]]:
        """Polls the page until it lists ``count`` pending questions."""
        deadline = time.monotonic() + POLL_TIMEOUT
        while True:
            state = self.http.get(f"/web/{key}/api/state")
            assert state.status_code == 200, state.text
            pending = state.json()["pending"]
            if len(pending) >= count:
                return pending
            assert time.monotonic() < deadline, f"the page shows no {count} pending question(s): {state.text}"
            time.sleep(0.05)

    def answer_on_page(self, question_id: str, answers: dict[str, Any], key: str = ME_KEY) -> None:
        """Answers as the page does: ``{"answers": {id: {"options": [i], "text": ...}}}``."""
        reply = self.http.post(f"/web/{key}/api/questions/{question_id}/answer", json={"answers": answers})
        assert reply.status_code == 200, reply.text
        assert reply.json() == {"status": "answered"}

    def skip_on_page(self, question_id: str, key: str = ME_KEY) -> None:
        reply = self.http.post(f"/web/{key}/api/questions/{question_id}/skip", json={})
        assert reply.status_code == 200, reply.text


@pytest.fixture
def askgate(tmp_path: Path) -> Iterator[Askgate]:
    server = Askgate(askgate_binary(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def shared_askgate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Askgate]:
    """One askgate for the tests that only read (the OpenAPI document)."""
    server = Askgate(askgate_binary(), tmp_path_factory.mktemp("askgate"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def deploy_question() -> dict[str, Any]:
    """The spec's deploy question."""
    return {
        "id": "deploy_target",
        "header": "Deploy",
        "question": "Where should this build go?",
        "options": [{"label": "Staging (Recommended)", "description": "Safe to try"}, {"label": "Production"}],
    }
