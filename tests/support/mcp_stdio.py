"""``winnow mcp`` as an agent's host runs it: a child process on stdin/stdout, in an environment with none of
this shell's settings, spoken to one JSON-RPC line at a time."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from winnow_local.invoke import ROOT

SETTINGS_PREFIXES = ("WINNOW_", "QDRANT_", "VOYAGE_", "POWERTOOLS_", "AWS_")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}
    env.update(extra)
    return env


class StdioServer:
    """One ``winnow mcp`` process, initialized, spoken to one line at a time."""

    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "winnow_local", "mcp", "--tenant", "acme"],
            cwd=ROOT,
            env=clean_env(WINNOW_HOME=str(home)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        self.lines: queue.Queue[str] = queue.Queue()
        stdout = self.process.stdout

        def pump() -> None:
            for line in stdout:
                self.lines.put(line)

        threading.Thread(target=pump, daemon=True).start()
        self.next_id = 1000
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        }
        assert "result" in self.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})[-1]
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def ask(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Every reply up to and including the one to ``message``."""
        self.send(json.dumps(message))
        replies: list[dict[str, Any]] = []
        while True:
            try:
                reply = dict(json.loads(self.lines.get(timeout=120)))
            except queue.Empty:
                raise AssertionError(f"no answer to {message!r} (server rc {self.process.poll()})") from None
            replies.append(reply)
            if reply.get("id") == message.get("id"):
                return replies

    def replies_to(self, line: str) -> list[dict[str, Any]]:
        """What the server wrote after ``line``, up to its answer to a ping sent after it."""
        self.send(line)
        self.next_id += 1
        replies = self.ask({"jsonrpc": "2.0", "id": self.next_id, "method": "ping"})
        assert replies[-1].get("result") == {}, replies[-1]
        return replies[:-1]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
