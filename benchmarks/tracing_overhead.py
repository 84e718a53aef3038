"""What tracing costs the offline suite: off (the default) vs recording vs exporting.

Each mode is one fresh process running `vitrine --all` on its own store, timed from before
vitrine is imported to after the suite returns:

- off: no destination; every span helper is the shared no-op and OpenTelemetry is not imported;
- recording: the OpenTelemetry SDK records every span, and an exporter discards them;
- exporting: OTLP/HTTP (protobuf) to a receiver on the loopback, as `--trace-to URL` does.

It also times the no-op helper itself and multiplies by the number of spans the suite opens,
which bounds what the instrumentation costs a run with tracing off.

Run: python benchmarks/tracing_overhead.py [--runs N] [--no-op-calls N] [--no-op-repeat N]
"""

from __future__ import annotations

import argparse
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
    result: dict[str, float] = json.loads(lines[0].removeprefix("RESULT "))
    return result


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


def _median_run(mode: str, root: Path, url: str, runs: int) -> dict[str, float]:
    """The run of median wall time among ``runs`` fresh processes, each on a new store."""
    done = sorted(
        (_run(mode, root / f"{mode}-{i}", url) for i in range(runs)), key=lambda r: r["seconds"]
    )
    return done[len(done) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, default=1, help="suite runs per mode; the median is shown (default 1)"
    )
    parser.add_argument(
        "--no-op-calls",
        type=int,
        default=100_000,
        help="no-op span helper calls per timing (default 100000)",
    )
    parser.add_argument(
        "--no-op-repeat",
        type=int,
        default=5,
        help="timings of the no-op helper; the best is kept (default 5)",
    )
    args = parser.parse_args()
    if min(args.runs, args.no_op_calls, args.no_op_repeat) < 1:
        parser.error("--runs, --no-op-calls and --no-op-repeat must be positive")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="vitrine-tracing-bench-") as tmp:
        root = Path(tmp)
        for mode in _MODES:
            results[mode] = _median_run(mode, root, url, args.runs)
        spans = _spans_per_suite(url + "/v1/traces", root / "count")
    server.shutdown()

    tracing.shutdown()
    per_call = (
        min(
            timeit.repeat(
                "with agent_span('a'):\n    pass",
                setup="from vitrine.tracing import agent_span",
                number=args.no_op_calls,
                repeat=args.no_op_repeat,
            )
        )
        / args.no_op_calls
    )

    base = results["off"]["seconds"]
    runs = "one run" if args.runs == 1 else f"median of {args.runs} runs"
    print(f"offline suite, {runs} per mode, {spans} spans per traced suite")
    print(f"{'mode':<11} {'wall s':>8} {'ratio':>7} {'exit':>5} {'otel modules':>13}")
    for mode in _MODES:
        r = results[mode]
        print(
            f"{mode:<11} {r['seconds']:>8.3f} {r['seconds'] / base:>7.3f} "
            f"{int(r['code']):>5} {int(r['otel_modules']):>13}"
        )
    print(
        f"exported to the loopback receiver: {_Receiver.spans_bytes} bytes of protobuf "
        f"over {args.runs} exporting run(s)"
    )
    no_op_total = per_call * spans
    print(
        f"no-op helper: {per_call * 1e9:.0f} ns per span; x {spans} spans = "
        f"{no_op_total * 1e6:.1f} us per suite ({no_op_total / base:.2e} of the off run)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
