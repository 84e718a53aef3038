"""Running a command and reading its own peak resident set, not the resident set of its parent.

Linux folds the memory a process had before ``exec`` into its ``ru_maxrss``: the kernel keeps
the larger of the old image's high-water mark and the new one's. A command started with
``subprocess.Popen`` from a benchmark that has already imported vitrine (or allocated anything)
is forked from that image, so ``os.wait4`` on it reports at least the benchmark's own size.
``/usr/bin/time`` does not have the problem because it is small when it forks; this module does
the same with a launcher: a bare interpreter (``-I -S``, about 9 MB) that spawns the command and
reads its ``ru_maxrss`` with ``os.wait4``. A figure can therefore not fall below the launcher's
own size, which is below that of any interpreter that has imported anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# Kept to the os and time modules so the launcher stays as small as a bare interpreter can be.
_LAUNCHER = """
import os, sys, time
report, argv = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - started
code = os.waitstatus_to_exitcode(status)
with open(report, "w") as out:
    out.write('{"returncode": %d, "wall_s": %r, "maxrss_kib": %d}' % (code, wall, usage.ru_maxrss))
"""


@dataclass(frozen=True)
class Measured:
    """One command's exit status, wall time (spawn to exit) and peak resident set."""

    returncode: int
    wall_s: float
    peak_rss_mb: float


def run_measured(
    command: list[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdout: IO[str] | int | None = None,
    stderr: IO[str] | int | None = None,
) -> Measured:
    """Run ``command`` through the launcher and return what it measured; the command's
    output goes where ``stdout`` and ``stderr`` say, as with ``subprocess.run``."""
    with tempfile.TemporaryDirectory(prefix="vitrine-measure-") as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(report), *command],
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            check=True,
        )
        figures = json.loads(report.read_text())
    return Measured(
        returncode=int(figures["returncode"]),
        wall_s=float(figures["wall_s"]),
        peak_rss_mb=int(figures["maxrss_kib"]) / 1024.0,  # ru_maxrss is in KiB on Linux
    )
