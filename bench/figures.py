"""Figures the benches print alike."""

import statistics


def quantile(ordered: list[float], q: float) -> float:
    """The value at ``q`` (0-1) of values already sorted: the nearest rank, no interpolation."""
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def percentiles(values: list[float]) -> str:
    """p50 and p99 of durations in seconds, in milliseconds."""
    ordered = sorted(values)
    p99 = quantile(ordered, 0.99)
    return f"p50 {statistics.median(ordered) * 1000:8.1f} ms   p99 {p99 * 1000:8.1f} ms   (n={len(ordered)})"
