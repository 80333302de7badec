"""Headless Chromium driven over the DevTools protocol: open a page, wait until it shows something, read
the DOM, take a screenshot. For the MLflow views test and the README screenshots (bench/screenshots.py).

    with Chromium(width=1600, height=1100) as browser:
        browser.open(url)
        browser.wait_for("document.querySelectorAll('[data-testid=draggable-chart-cards-grid]').length > 0")
        browser.screenshot("views.png")

A page that renders in JavaScript (the MLflow UI) is ready when it says so, not after a fixed pause:
`wait_for` polls an expression. Talks to Chromium with aiohttp's websocket client (installed with mlflow).
Chromium runs with a fresh profile and everything that would reach the network on its own turned off.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--remote-debugging-port=0")


# What a test that needs the browser says when it skips: the command that enables it (.ci/run runs it).
NO_CHROMIUM = "no chromium, chromium-browser or google-chrome on PATH; Debian: apt-get install chromium fonts-noto-cjk"


def find_chromium() -> str | None:
    return next((b for b in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if b), None)


class Chromium:
    def __init__(self, width: int = 1600, height: int = 1100, binary: str | None = None):
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise RuntimeError(NO_CHROMIUM)
        self.width, self.height = width, height
        self._profile = Path(tempfile.mkdtemp(prefix="mlgrpo-chromium-"))
        self._loop = asyncio.new_event_loop()
        self._process: subprocess.Popen | None = None
        self._session = self._socket = None
        self._next_id = 0

    # ---- lifecycle

    def __enter__(self) -> Chromium:
        command = [self.binary, *FLAGS, f"--user-data-dir={self._profile}",
                   f"--window-size={self.width},{self.height}", "about:blank"]
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._loop.run_until_complete(self._connect(self._debug_port()))
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height, deviceScaleFactor=1,
                  mobile=False)
        return self

    def __exit__(self, *exc) -> None:
        if self._session is not None:
            self._loop.run_until_complete(self._session.close())
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._loop.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _debug_port(self, timeout_s: float = 30.0) -> int:
        """Chromium writes the port it chose to DevToolsActivePort in its profile."""
        marker = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.binary} exited with {self._process.returncode} at start")
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            time.sleep(0.1)
        raise RuntimeError(f"{self.binary} did not open its DevTools port within {timeout_s:g} s")

    async def _connect(self, port: int) -> None:
        import aiohttp

        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as answer:
            targets = await answer.json(content_type=None)
        page = next(t for t in targets if t.get("type") == "page")
        self._socket = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)

    # ---- protocol

    def call(self, method: str, timeout_s: float = 60.0, **params):
        return self._loop.run_until_complete(asyncio.wait_for(self._call(method, params), timeout_s))

    async def _call(self, method: str, params: dict):
        self._next_id += 1
        ident = self._next_id
        await self._socket.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        while True:  # events arrive in between; the answer carries our id
            message = json.loads((await self._socket.receive()).data)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    # ---- pages

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 90.0, pause_s: float = 0.5):
        """Poll `expression` until it is truthy; its value, or TimeoutError with the page's text."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(pause_s)
        text = self.evaluate("document.body ? document.body.innerText.slice(0, 1500) : ''")
        raise TimeoutError(f"not true after {timeout_s:g} s: {expression}; the page shows: {text!r}")

    def screenshot(self, path: str | Path, height: int | None = None) -> Path:
        """A PNG of the viewport (of the top `height` pixels, when given)."""
        params = {"format": "png"}
        if height:
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}
        data = self.call("Page.captureScreenshot", **params)["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
