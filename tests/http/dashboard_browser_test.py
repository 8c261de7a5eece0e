#!/usr/bin/env python3
"""The dashboard in a real browser: headless Chromium loads GET / from a running
`oncecount demo` and the numbers on the page must be the JSON API's.

The demo sends a finite stream (--events) and says when its counters equal what it
sent; from then on nothing changes, so the page and the API must agree exactly. The
page is rendered with less virtual time than one poll interval, so what it plots is
what it got at load: every plot must already have a line of several points per
shard, from the instance's history (GET /v1/history). Every request goes through a
recording proxy, and none may be refused (status 400 or more). The health strip must
show every check, all well on the healthy demo; then the proxy marks one shard
failed in /v1/stats (a failure the API's own tests cover) and the strip must show
it, with its reason; a shard whose filter was made for a smaller window (set by the
proxy alike) must turn the window check bad, naming it, and one whose filter keeps no
memory bound the memory check orange. The test also loads a search (#search=prefix), saves the two
screenshots (dashboard-healthy.png and dashboard-failed-shard.png in the output
directory; scripts/dashboard-screenshots regenerates docs/images from them), and
stops the demo with SIGINT, which must exit cleanly.

usage: dashboard_browser_test.py ONCECOUNT_BINARY OUTPUT_DIR
"""
import html.parser
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request

CHROMIUM = os.environ.get("ONCECOUNT_CHROMIUM", "/usr/bin/chromium")
CHARTS = ["events_per_s", "fpp", "filters", "refresh_s", "dup_share", "near_edge_per_s", "lag",
          "replica_lag_ms"]
# The plots every active shard has a line in from its first sample on.
PLOTTED_AT_LOAD = ["events_per_s", "filters", "refresh_s", "dup_share", "lag"]
CHECKS = ["shards", "fpp", "window", "memory", "time", "replicas", "transaction"]
FAILURE = "the shard ran out of memory (restoring in 2000 ms)"


class Page(html.parser.HTMLParser):
    """What the test reads from the rendered DOM: text by element id, counter rows,
    shard rows and the charts' polylines."""

    def __init__(self):
        super().__init__()
        self.text_by_id = {}
        self.counters = {}  # name -> value (data-value)
        self.counter_text = {}  # name -> the value cell's text
        self.shards = {}  # (partition, role) -> {field: text}
        self.polylines = {}  # chart -> [point count per line]
        self.checks = {}  # health check -> {"level", "text"}
        self._check = None
        self._open = []  # stack of (tag, id or None)
        self._shard = None
        self._field = None
        self._chart = None
        self._value_of = None  # the counter whose value cell is open

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._open.append((tag, a.get("id")))
        if tag == "tr" and "data-counter" in a:
            self._counter_row = a["data-counter"]
        if tag == "td" and "data-value" in a:
            self.counters[self._counter_row] = int(a["data-value"])
            self._value_of = self._counter_row
        if tag == "tr" and "data-partition" in a:
            self._shard = (int(a["data-partition"]), a["data-role"])
            self.shards[self._shard] = {}
        if tag == "td" and "data-field" in a and self._shard is not None:
            self._field = a["data-field"]
        if tag == "div" and "data-chart" in a:
            self._chart = a["data-chart"]
            self.polylines[self._chart] = []
        if tag == "div" and "data-check" in a:
            self._check = a["data-check"]
            self._check_depth = len(self._open)
            self.checks[self._check] = {"level": a.get("data-level"), "text": ""}
        if tag == "polyline" and self._chart is not None:
            points = a.get("points", "").split()
            self.polylines[self._chart].append(len(points))

    def handle_endtag(self, tag):
        while self._open:
            t, _ = self._open.pop()
            if t == tag:
                break
        if tag == "td":
            self._field = None
            self._value_of = None
        if self._check is not None and len(self._open) < self._check_depth:
            self._check = None

    def handle_data(self, data):
        if self._check is not None:
            self.checks[self._check]["text"] += data
        for _, element_id in reversed(self._open):
            if element_id:
                self.text_by_id[element_id] = self.text_by_id.get(element_id, "") + data
                break
        if self._field is not None:
            self.shards[self._shard][self._field] = data
        if self._value_of is not None:
            self.counter_text[self._value_of] = self.counter_text.get(self._value_of, "") + data


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


class RecordingProxy:
    """Forwards the browser's requests to the instance and records each path with the
    status the instance answered; with `failed_partition` set, marks that shard failed
    in /v1/stats, as the API reports a shard that ran out of memory; with
    `short_window_partition` set, gives that shard the record window a filter made
    for a smaller dedup.window_ms holds."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.requests = []  # (path, status)
        self.failed_partition = None
        self.short_window_partition = None
        self.unbounded_partition = None
        self.saturated_counter = None
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                try:
                    with urllib.request.urlopen(proxy.upstream + self.path, timeout=10) as r:
                        status, body, kind = r.status, r.read(), r.headers["Content-Type"]
                except urllib.error.HTTPError as e:
                    status, body, kind = e.code, e.read(), e.headers["Content-Type"]
                proxy.requests.append((self.path, status))
                if self.path == "/v1/stats" and proxy.short_window_partition is not None:
                    stats = json.loads(body)
                    for shard in stats["shards"]:
                        if shard["partition"] == proxy.short_window_partition and \
                                shard["role"] == "active":
                            shard["record_window_held_ms"] = 61000
                    body = json.dumps(stats).encode()
                if self.path == "/v1/stats" and proxy.unbounded_partition is not None:
                    stats = json.loads(body)
                    for shard in stats["shards"]:
                        if shard["partition"] == proxy.unbounded_partition and \
                                shard["role"] == "active":
                            shard["filter_unbounded"] = True
                    body = json.dumps(stats).encode()
                if self.path.startswith("/v1/counters") and proxy.saturated_counter is not None:
                    page = json.loads(body)
                    for c in page["counters"]:
                        if c["counter"] == proxy.saturated_counter:
                            c["value"] = 2 ** 63 - 1
                            c["saturated"] = True
                    body = json.dumps(page).encode()
                if self.path == "/v1/stats" and proxy.failed_partition is not None:
                    stats = json.loads(body)
                    for shard in stats["shards"]:
                        if shard["partition"] == proxy.failed_partition and shard["role"] == "active":
                            shard["phase"] = "failed"
                            shard["failure"] = FAILURE
                    stats["ready"] = False
                    body = json.dumps(stats).encode()
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def chromium(args, timeout=120):
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage", "--user-data-dir=" + PROFILE]
    r = subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        fail("chromium exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    return r.stdout


def render(url, budget_ms=900):
    # Less virtual time than one poll interval (1 s): the page shows what it got at
    # load, its history included.
    dom = chromium(["--virtual-time-budget=%d" % budget_ms, "--dump-dom", url])
    page = Page()
    page.feed(dom)
    return page


def number(text):
    return int(text.replace(",", "").strip())


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    binary, out_dir = sys.argv[1], sys.argv[2]
    if not os.access(CHROMIUM, os.X_OK):
        fail(CHROMIUM + " is missing: scripts/setup installs Debian's chromium package")
    os.makedirs(out_dir, exist_ok=True)
    global PROFILE
    PROFILE = os.path.join(out_dir, "chromium-profile")

    port = free_port()
    base = "http://127.0.0.1:%d" % port
    demo = subprocess.Popen([binary, "demo", "--http", "127.0.0.1:%d" % port, "--events", "3000",
                             "--rate", "1500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines = []
    exact = threading.Event()

    def read_stdout():
        for line in demo.stdout:
            lines.append(line)
            if "counters equal what was sent" in line:
                exact.set()

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    stderr_lines = []
    stderr_reader = threading.Thread(target=lambda: stderr_lines.extend(demo.stderr), daemon=True)
    stderr_reader.start()
    try:
        if not exact.wait(180):
            fail("the demo never reported exact counters; stdout:\n" + "".join(lines) +
                 "\nstderr:\n" + "".join(stderr_lines[-40:]))
        if not any("open " + base + "/" in line for line in lines):
            fail("the demo did not print the URL to open: " + "".join(lines))

        counters = {c["counter"]: c["value"] for c in get_json(base + "/v1/counters?limit=1000")["counters"]}
        proxy = RecordingProxy(base)
        # Retries the demo sent late still arrive after its counters are exact: the
        # totals only grow, so the page must show numbers between the API's answers
        # just before and just after it rendered.
        stats = get_json(base + "/v1/stats")
        page = render(proxy.url + "/")
        after = get_json(base + "/v1/stats")

        if page.counters != counters:
            fail("counters on the page %s != the API's %s" % (page.counters, counters))
        totals, totals_after = stats["totals"], after["totals"]
        for element, key in [("total-events-applied", "events_applied"),
                             ("total-duplicates-dropped", "duplicates_dropped"),
                             ("total-dead-lettered", "dead_lettered")]:
            shown = number(page.text_by_id.get(element, "-1"))
            if not totals[key] <= shown <= totals_after[key]:
                fail("%s shows %d, /v1/stats says %d before the page and %d after" %
                     (element, shown, totals[key], totals_after[key]))
        if totals["duplicates_dropped"] == 0:
            fail("the demo's stream dropped no duplicates: nothing for the page to show")
        if "ready" not in page.text_by_id.get("status", "") or "complete" not in page.text_by_id["status"]:
            fail("status line: %r" % page.text_by_id.get("status"))
        for tile in ("rate-events", "rate-duplicates"):
            if page.text_by_id.get(tile, "–").strip() in ("", "–"):
                fail("%s shows no rate at load" % tile)
        api_shards = {(s["partition"], s["role"]): s for s in stats["shards"]}
        api_shards_after = {(s["partition"], s["role"]): s for s in after["shards"]}
        if set(page.shards) != set(api_shards):
            fail("shard rows %s != the API's shards %s" % (sorted(page.shards), sorted(api_shards)))
        for key, fields in page.shards.items():
            for field in ("events_applied", "duplicates_dropped"):
                low, high = api_shards[key][field], api_shards_after.get(key, api_shards[key])[field]
                if not low <= number(fields[field]) <= high:
                    fail("shard %s %s: page %s, API %d before and %d after" %
                         (key, field, fields[field], low, high))
        actives = sum(1 for s in stats["shards"] if s["role"] == "active")
        history = get_json(base + "/v1/history")
        for chart in PLOTTED_AT_LOAD:
            lines_drawn = [n for n in page.polylines.get(chart, []) if n >= 3]
            if len(lines_drawn) < actives:
                fail("chart %s draws %d lines of 3+ points at load for %d shards (history: %d samples)" %
                     (chart, len(lines_drawn), actives, len(history["times"])))
        missing = [c for c in CHARTS if c not in page.polylines]
        if missing:
            fail("charts missing: %s" % missing)
        if sorted(page.checks) != sorted(CHECKS):
            fail("health checks %s, expected %s" % (sorted(page.checks), sorted(CHECKS)))
        bad = {c: v for c, v in page.checks.items() if v["level"] == "bad"}
        if bad or page.checks["shards"]["level"] != "ok":
            fail("the healthy demo's health strip: %s" % page.checks)
        for check, v in page.checks.items():
            if "oncecount_" not in v["text"] or "docs/operations.md#" not in v["text"]:
                fail("health check %s names no metric or runbook: %r" % (check, v["text"]))

        searched = render(proxy.url + "/#search=counter-1")
        expected = {n: v for n, v in counters.items() if n.startswith("counter-1")}
        if not expected or searched.counters != expected:
            fail("search counter-1 shows %s, expected %s" % (searched.counters, expected))

        # A sum capped at int64's end: the page says it is capped, and that the value
        # it shows (a double in the browser) is approximate.
        proxy.saturated_counter = sorted(counters)[0]
        capped = render(proxy.url + "/")
        proxy.saturated_counter = None
        shown = capped.counter_text.get(sorted(counters)[0], "")
        if "(saturated)" not in shown or not shown.startswith("\u2248"):
            fail("a saturated counter shows %r" % shown)

        recent = render(proxy.url + "/#order=recent")
        if not recent.counters or any(counters.get(n) != v for n, v in recent.counters.items()):
            fail("the recently changed counters %s are not the API's %s" % (recent.counters, counters))

        healthy = os.path.join(out_dir, "dashboard-healthy.png")
        chromium(["--virtual-time-budget=900", "--window-size=1280,1000",
                  "--screenshot=" + healthy, proxy.url + "/"])

        if any(shard.get("record_window_held_ms", 0) is not None for shard in stats["shards"]):
            fail("the demo's shards hold their window: record_window_held_ms must be null: %s" %
                 stats["shards"])
        proxy.short_window_partition = stats["shards"][0]["partition"]
        shorter = render(proxy.url + "/").checks.get("window", {})
        if shorter.get("level") != "bad" or ("partition %d catches retries up to 61.0 s" %
                                            proxy.short_window_partition) not in shorter.get("text", ""):
            fail("a shard whose filter was made for a smaller window is not in the health "
                 "strip: %s" % shorter)
        proxy.short_window_partition = None

        if any(shard.get("filter_unbounded") is not False for shard in stats["shards"]):
            fail("the demo's filters are bounded: filter_unbounded must be false: %s" %
                 stats["shards"])
        proxy.unbounded_partition = stats["shards"][0]["partition"]
        memory = render(proxy.url + "/").checks.get("memory", {})
        if memory.get("level") != "warn" or ("partition %d keeps no memory bound" %
                                            proxy.unbounded_partition) not in memory.get("text", ""):
            fail("a shard whose filter keeps no memory bound is not in the health strip: %s" %
                 memory)
        proxy.unbounded_partition = None

        proxy.failed_partition = stats["shards"][0]["partition"]
        failing = render(proxy.url + "/")
        shards_check = failing.checks.get("shards", {})
        if shards_check.get("level") != "bad" or FAILURE not in shards_check.get("text", "") or \
                ("partition %d" % proxy.failed_partition) not in shards_check.get("text", ""):
            fail("a failed shard is not in the health strip with its reason: %s" % shards_check)
        failed_shot = os.path.join(out_dir, "dashboard-failed-shard.png")
        chromium(["--virtual-time-budget=900", "--window-size=1280,1000",
                  "--screenshot=" + failed_shot, proxy.url + "/"])
        for shot in (healthy, failed_shot):
            if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
                fail("no screenshot at " + shot)

        refused = [(path, status) for path, status in proxy.requests if status >= 400]
        if refused:
            fail("the page made requests the API refused: %s" % refused)
        asked = {path.split("?")[0] for path, _ in proxy.requests}
        for needed in ("/", "/v1/stats", "/v1/history", "/v1/counters", "/metrics"):
            if needed not in asked:
                fail("the page never asked for %s (asked: %s)" % (needed, sorted(asked)))
        proxy.close()

        demo.send_signal(signal.SIGINT)
        code = demo.wait(60)
        reader.join(5)
        stderr_reader.join(5)
        if code != 0 or not any("stopped cleanly" in line for line in stderr_lines):
            fail("Ctrl-C: exit %d, stderr tail:\n%s" % (code, "".join(stderr_lines[-20:])))
        print("dashboard matches the API: %d counters, %d shards, %d requests; screenshots in %s" %
              (len(counters), len(api_shards), len(proxy.requests), out_dir))
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()


if __name__ == "__main__":
    main()
