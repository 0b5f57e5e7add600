"""A real memd daemon per test, on a temporary data dir: the binary from
``MEMD_BIN``, else the checkout's ``target/debug/memd``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


def memd_bin() -> str:
    b = os.environ.get("MEMD_BIN") or str(ROOT / "target" / "debug" / "memd")
    if not Path(b).exists():
        pytest.exit(f"no memd binary at {b}: build it (cargo build) or set MEMD_BIN", 2)
    return b


class Daemon:
    def __init__(self, config: str = ""):
        self.dir = Path(tempfile.mkdtemp(prefix="memd-py-"))
        self.data = self.dir / "data"
        self.socket = str(self.data / "memd.sock")
        self.bin = memd_bin()
        args = [self.bin, "daemon", "--data-dir", str(self.data)]
        if config:
            cfg = self.dir / "config.toml"
            cfg.write_text(config)
            args += ["--config", str(cfg)]
        env = {**os.environ, "HOME": str(self.dir), "MEMD_LOG": "warn"}
        env.pop("MEMD_SOCKET", None)
        env.pop("MEMD_NAMESPACE", None)
        self.log = open(self.dir / "daemon.log", "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log, env=env)
        deadline = time.time() + 30
        while not self.answers():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError((self.dir / "daemon.log").read_text())
            time.sleep(0.02)

    def answers(self) -> bool:
        """Whether the daemon accepts a connection on its socket."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(self.socket)
                return True
            except OSError:
                return False

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.bin, "--data-dir", str(self.data), "--no-autostart", *args],
            capture_output=True, text=True, env={**os.environ, "HOME": str(self.dir)},
        )

    def stop(self) -> None:
        exited = self.proc.poll()
        if exited is not None:
            print(f"the daemon exited during the test, with {exited}")
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        # Captured: pytest shows it beside a failed test.
        print((self.dir / "daemon.log").read_text(errors="replace"))
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def daemon():
    d = Daemon()
    yield d
    d.stop()
