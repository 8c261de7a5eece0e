#!/usr/bin/env python3
"""The dashboard in a real browser: headless Chromium loads GET / from a running
`oncecount demo` and the numbers on the page must be the JSON API's.

The demo sends a finite stream (--events) and says when its counters equal what it
sent; from then on nothing changes, so the page and the API must agree exactly. The
test also loads a search (#search=prefix), checks that every plot has a line per
shard, saves a screenshot (dashboard.png in the output directory), and stops the
demo with SIGINT, which must exit cleanly.

usage: dashboard_browser_test.py ONCECOUNT_BINARY OUTPUT_DIR
"""
import html.parser
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request

CHROMIUM = os.environ.get("ONCECOUNT_CHROMIUM", "/usr/bin/chromium")
CHARTS = ["fpp", "filters", "refresh_s", "dup_share", "near_edge_per_s", "replica_lag_ms"]


class Page(html.parser.HTMLParser):
    """What the test reads from the rendered DOM: text by element id, counter rows,
    shard rows and the charts' polylines."""

    def __init__(self):
        super().__init__()
        self.text_by_id = {}
        self.counters = {}  # name -> value (data-value)
        self.shards = {}  # (partition, role) -> {field: text}
        self.polylines = {}  # chart -> [point count per line]
        self._open = []  # stack of (tag, id or None)
        self._shard = None
        self._field = None
        self._chart = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self._open.append((tag, a.get("id")))
        if tag == "tr" and "data-counter" in a:
            self._counter_row = a["data-counter"]
        if tag == "td" and "data-value" in a:
            self.counters[self._counter_row] = int(a["data-value"])
        if tag == "tr" and "data-partition" in a:
            self._shard = (int(a["data-partition"]), a["data-role"])
            self.shards[self._shard] = {}
        if tag == "td" and "data-field" in a and self._shard is not None:
            self._field = a["data-field"]
        if tag == "div" and "data-chart" in a:
            self._chart = a["data-chart"]
            self.polylines[self._chart] = []
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

    def handle_data(self, data):
        for _, element_id in reversed(self._open):
            if element_id:
                self.text_by_id[element_id] = self.text_by_id.get(element_id, "") + data
                break
        if self._field is not None:
            self.shards[self._shard][self._field] = data


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


def chromium(args, timeout=120):
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage", "--user-data-dir=" + PROFILE]
    r = subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        fail("chromium exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    return r.stdout


def render(url):
    # Virtual time lets the page's timers run (several polls of /v1/stats) without
    # the test waiting for them in real time.
    dom = chromium(["--virtual-time-budget=6000", "--dump-dom", url])
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
        # Retries the demo sent late still arrive after its counters are exact: the
        # totals only grow, so the page must show numbers between the API's answers
        # just before and just after it rendered.
        stats = get_json(base + "/v1/stats")
        page = render(base + "/")
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
        for chart in CHARTS[:4]:
            lines_drawn = [n for n in page.polylines.get(chart, []) if n >= 2]
            if len(lines_drawn) < actives:
                fail("chart %s draws %d lines of 2+ points for %d shards" % (chart, len(lines_drawn), actives))
        missing = [c for c in CHARTS if c not in page.polylines]
        if missing:
            fail("charts missing: %s" % missing)

        searched = render(base + "/#search=counter-1")
        expected = {n: v for n, v in counters.items() if n.startswith("counter-1")}
        if not expected or searched.counters != expected:
            fail("search counter-1 shows %s, expected %s" % (searched.counters, expected))

        screenshot = os.path.join(out_dir, "dashboard.png")
        chromium(["--virtual-time-budget=6000", "--window-size=1400,1000",
                  "--screenshot=" + screenshot, base + "/"])
        if not os.path.exists(screenshot) or os.path.getsize(screenshot) < 10000:
            fail("no screenshot at " + screenshot)

        demo.send_signal(signal.SIGINT)
        code = demo.wait(60)
        reader.join(5)
        stderr_reader.join(5)
        if code != 0 or not any("stopped cleanly" in line for line in stderr_lines):
            fail("Ctrl-C: exit %d, stderr tail:\n%s" % (code, "".join(stderr_lines[-20:])))
        print("dashboard matches the API: %d counters, %d shards; screenshot %s" %
              (len(counters), len(api_shards), screenshot))
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()


if __name__ == "__main__":
    main()
