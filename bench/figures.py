"""Figures the benches print alike."""

import statistics


def percentiles(values: list[float]) -> str:
    """p50 and p99 of durations in seconds, in milliseconds."""
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:8.1f} ms   p99 {p99 * 1000:8.1f} ms   (n={len(ordered)})"
