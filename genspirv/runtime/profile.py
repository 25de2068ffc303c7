"""Host profiler: where the host's time goes inside dispatch and flush.

Takes ``start()`` / ``stop(phase, t0)`` pairs from the device (phases:
record, descriptors, submit, wait, bookkeeping); gives per-phase totals and
counts (``table()``, ``report()``). Off unless ``GENSPIRV_HOST_PROFILE=1``
(or ``Device(host_profile=True)``); off, ``start`` returns 0 and ``stop``
returns at once, so the hooks stay in the hot path for free.
"""

from __future__ import annotations

import time

PHASES = ("record", "descriptors", "submit", "wait", "bookkeeping")


class HostProfile:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._ns = {p: 0 for p in PHASES}
        self._count = {p: 0 for p in PHASES}

    def start(self) -> int:
        return time.perf_counter_ns() if self.enabled else 0

    def stop(self, phase: str, t0: int) -> int:
        """Charge the time since ``t0`` to ``phase``; returns now (the next phase's t0)."""
        if not self.enabled:
            return 0
        now = time.perf_counter_ns()
        self._ns[phase] += now - t0
        self._count[phase] += 1
        return now

    def table(self) -> dict[str, dict[str, float]]:
        """{phase: {"total_us", "count", "mean_us"}} for every phase."""
        return {p: {"total_us": self._ns[p] / 1e3, "count": self._count[p],
                    "mean_us": self._ns[p] / 1e3 / self._count[p] if self._count[p] else 0.0}
                for p in PHASES}

    def report(self) -> str:
        rows = self.table()
        total = sum(r["total_us"] for r in rows.values()) or 1.0
        lines = [f"{'phase':<12} {'total ms':>10} {'calls':>8} {'mean us':>9} {'share':>6}"]
        for p, r in rows.items():
            lines.append(f"{p:<12} {r['total_us'] / 1e3:>10.3f} {r['count']:>8} "
                         f"{r['mean_us']:>9.2f} {100 * r['total_us'] / total:>5.1f}%")
        return "\n".join(lines)

