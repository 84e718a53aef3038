"""What tracing costs the offline suite: off (the default) vs recording vs exporting.

Each mode is one fresh process running `vitrine --all` on its own store, timed from before
vitrine is imported to after the suite returns:

- off: no destination; every span helper is the shared no-op and OpenTelemetry is not imported;
- recording: the OpenTelemetry SDK records every span, and an exporter discards them;
- exporting: OTLP/HTTP (protobuf) to a receiver on the loopback, as `--trace-to URL` does.

It also times the no-op helper itself and multiplies by the number of spans the suite opens,
which bounds what the instrumentation costs a run with tracing off.

Run: python benchmarks/tracing_overhead.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import timeit
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from vitrine import tracing

_CHILD = """
import json, sys, time
started = time.perf_counter()
mode, store, url = sys.argv[1], sys.argv[2], sys.argv[3]
from vitrine import tracing
from vitrine._cli import main
argv = ["--all", "--output", store]
if mode == "recording":
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    tracing.setup(tracing.TraceSettings(url), exporter=Discard())
elif mode == "exporting":
    argv += ["--trace-to", url]
code = main(argv)
elapsed = time.perf_counter() - started
otel = sum(1 for m in sys.modules if m.split(".")[0] == "opentelemetry")
print("RESULT " + json.dumps({"code": code, "seconds": elapsed, "otel_modules": otel}))
"""

_MODES = ("off", "recording", "exporting")


class _Receiver(BaseHTTPRequestHandler):
    spans_bytes = 0

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        _Receiver.spans_bytes += len(self.rfile.read(length))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def _run(mode: str, store: Path, url: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_"))}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(store), url],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"the {mode} run produced no result")
    return json.loads(lines[0].removeprefix("RESULT "))


def _spans_per_suite(url: str, store: Path) -> int:
    """The number of spans one traced suite opens, counted with an in-memory exporter."""
    code = (
        "import sys\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import "
        "InMemorySpanExporter\n"
        "from vitrine import tracing\n"
        "from vitrine._cli import main\n"
        "exporter = InMemorySpanExporter()\n"
        f"tracing.setup(tracing.TraceSettings({url!r}), exporter=exporter)\n"
        f"main(['--all', '--output', {str(store)!r}])\n"
        "print('SPANS', len(exporter.get_finished_spans()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    found = [line for line in done.stdout.splitlines() if line.startswith("SPANS ")]
    return int(found[0].split()[1]) if found else 0


def main() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="vitrine-tracing-bench-") as tmp:
        root = Path(tmp)
        for mode in _MODES:
            results[mode] = _run(mode, root / mode, url)
        spans = _spans_per_suite(url + "/v1/traces", root / "count")
    server.shutdown()

    tracing.shutdown()
    per_call = (
        min(
            timeit.repeat(
                "with agent_span('a'):\n    pass",
                setup="from vitrine.tracing import agent_span",
                number=100_000,
                repeat=5,
            )
        )
        / 100_000
    )

    base = results["off"]["seconds"]
    print(f"offline suite, one run per mode, {spans} spans per traced suite")
    print(f"{'mode':<11} {'wall s':>8} {'ratio':>7} {'exit':>5} {'otel modules':>13}")
    for mode in _MODES:
        r = results[mode]
        print(
            f"{mode:<11} {r['seconds']:>8.3f} {r['seconds'] / base:>7.3f} "
            f"{int(r['code']):>5} {int(r['otel_modules']):>13}"
        )
    print(f"exported to the loopback receiver: {_Receiver.spans_bytes} bytes of protobuf")
    no_op_total = per_call * spans
    print(
        f"no-op helper: {per_call * 1e9:.0f} ns per span; x {spans} spans = "
        f"{no_op_total * 1e6:.1f} us per suite ({no_op_total / base:.2e} of the off run)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
