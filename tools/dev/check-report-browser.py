#!/usr/bin/env python3
"""Open a run's index.html in headless Chromium, as a reader would, and check it.

    tools/dev/check-report-browser.py [--screenshot PNG] [--width PX] [--height PX]
                                    [--full-page] [--timeout S] RESULTS_DIR|HTML_FILE

Loads the page through the DevTools protocol (--remote-debugging-pipe: JSON
messages on file descriptors 3 and 4, so no websocket and no port), then
fails on any console error, uncaught exception or failed load (the browser's
log), and on any <img> that did not load (naturalWidth 0). --screenshot
writes a PNG of the first screen (WIDTH x HEIGHT, default 1280 x 900), or of
the whole page with --full-page. The browser is $CHROMIUM, else the first of
chromium, chromium-headless-shell, chromium-browser, google-chrome on PATH;
it runs with a fresh profile in a temporary directory (and --no-sandbox as
root) and is ended by its own process group when done. Standard library only.
Exit: 0 the page is clean; 1 a problem was found (each printed); 2 usage;
3 no browser, or it did not start; 4 timeout.
"""
import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BROWSERS = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")

# Run in the page after load: every image that has not loaded, by its alt text or source.
BROKEN_IMAGES = """JSON.stringify(Array.from(document.images)
    .filter(i => !i.complete || i.naturalWidth === 0)
    .map(i => i.alt || i.getAttribute('src').slice(0, 80)))"""


class Timeout(Exception):
    pass


class Browser:
    """One headless browser on a DevTools pipe: send() a command, read its answer; events are kept."""

    def __init__(self, exe, profile):
        args = [exe, "--headless", "--remote-debugging-pipe", f"--user-data-dir={profile}", "--no-first-run",
                "--no-default-browser-check", "--disable-gpu", "--disable-extensions", "--hide-scrollbars",
                "--allow-file-access-from-files"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        # The protocol's fixed descriptors: 3 = commands in, 4 = answers out. Each end is first
        # copied above 9, so that neither is overwritten or left close-on-exec when os.pipe()
        # returned 3 or 4 itself; the originals are close-on-exec and do not reach the browser.
        def pipes_on_3_and_4():
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen(args + ["about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(profile, "browser.log"), "w"),
                                     close_fds=False, preexec_fn=pipes_on_3_and_4, start_new_session=True)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buf, self.next_id, self.events = b"", 0, []

    def send(self, method, params=None, session=None, deadline=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        try:
            os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise RuntimeError("the browser exited (see its log below)") from None
        while True:
            m = self.read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            self.events.append(m)

    def read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise Timeout()
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe (see its log below)")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def wait_event(self, method, deadline):
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self.read(deadline))

    def close(self):
        try:
            os.write(self.to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:  # its helpers (renderer, zygote) share the group this script started
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)


def problems_in(events):
    """Console errors, uncaught exceptions and failed loads among the page's events."""
    found = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            found.append(f"console error: {text}")
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            found.append(f"uncaught exception: {d.get('exception', {}).get('description', d.get('text', ''))}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            ent = p["entry"]
            found.append(f"browser log error ({ent.get('source')}): {ent.get('text')} {ent.get('url', '')}".rstrip())
    return found


def inspect(browser, url, opts, deadline):
    """Load url in a new tab; return (problems, screenshot PNG bytes or None)."""
    target = browser.send("Target.createTarget", {"url": "about:blank"}, deadline=deadline)["targetId"]
    s = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True}, deadline=deadline)["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        browser.send(f"{domain}.enable", session=s, deadline=deadline)
    metrics = {"width": opts.width, "height": opts.height, "deviceScaleFactor": 1, "mobile": False}
    browser.send("Emulation.setDeviceMetricsOverride", metrics, session=s, deadline=deadline)
    nav = browser.send("Page.navigate", {"url": url}, session=s, deadline=deadline)
    if nav.get("errorText"):
        return [f"page did not load: {nav['errorText']}"], None
    browser.wait_event("Page.loadEventFired", deadline)
    answer = browser.send("Runtime.evaluate", {"expression": BROKEN_IMAGES, "returnByValue": True}, session=s,
                          deadline=deadline)
    broken = json.loads(answer["result"]["value"])
    problems = problems_in(browser.events) + [f"image did not load: {b}" for b in broken]
    shot = None
    if opts.screenshot:
        if opts.full_page:
            size = browser.send("Page.getLayoutMetrics", session=s, deadline=deadline)["cssContentSize"]
            metrics["height"] = int(size["height"])
            browser.send("Emulation.setDeviceMetricsOverride", metrics, session=s, deadline=deadline)
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=s, deadline=deadline)["data"]
        shot = base64.b64decode(shot)
    return problems, shot


def find_browser():
    exe = os.environ.get("CHROMIUM")
    if exe:
        return shutil.which(exe)
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def main():
    ap = argparse.ArgumentParser(description="Check a run's index.html in headless Chromium.")
    ap.add_argument("page", help="a results directory (its index.html) or an HTML file")
    ap.add_argument("--screenshot", metavar="PNG")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--full-page", action="store_true")
    ap.add_argument("--timeout", type=float, default=60)
    opts = ap.parse_args()
    path = os.path.join(opts.page, "index.html") if os.path.isdir(opts.page) else opts.page
    if not os.path.isfile(path):
        print(f"check-report-browser: '{path}' is not a file; give a results directory or an HTML file",
              file=sys.stderr)
        return 2
    exe = find_browser()
    if not exe:
        print("check-report-browser: no Chromium found (" + ", ".join(BROWSERS) + ", or $CHROMIUM); "
              "scripts/install-deps.sh --for report installs it", file=sys.stderr)
        return 3
    deadline = time.monotonic() + opts.timeout
    with tempfile.TemporaryDirectory(prefix="pb-chromium.") as profile:
        browser = Browser(exe, profile)
        try:
            problems, shot = inspect(browser, "file://" + os.path.abspath(path), opts, deadline)
        except Timeout:
            print(f"check-report-browser: no answer from {exe} within {opts.timeout:g} s", file=sys.stderr)
            return 4
        except RuntimeError as e:
            log = open(os.path.join(profile, "browser.log")).read()[-2000:]
            print(f"check-report-browser: {exe}: {e}\n{log}", file=sys.stderr)
            return 3
        finally:
            browser.close()
    if shot:
        with open(opts.screenshot, "wb") as f:
            f.write(shot)
    for p in problems:
        print(f"check-report-browser: {path}: {p}")
    if not problems:
        print(f"check-report-browser: {path}: no console errors, every image loaded")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
