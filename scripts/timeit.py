#!/usr/bin/env python3
"""Runs a command N times; prints one "seconds peak_rss_kb cpu_seconds" line per run.

Wall time from a monotonic clock (microseconds, where GNU time's %e stops at 10 ms,
too coarse for commands that take 50 ms); peak RSS and CPU time (user and system) from
the child's own rusage.
Stdout is discarded; a failing run prints its stderr and exits 1.

    timeit.py RUNS COMMAND [ARGS...]
"""
import os
import subprocess
import sys
import time


def main() -> int:
    runs, cmd = int(sys.argv[1]), sys.argv[2:]
    for _ in range(runs):
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.stderr.buffer.write(stderr)
            print(f"failed: {' '.join(cmd)}", file=sys.stderr)
            return 1
        print(f"{elapsed:.4f} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
