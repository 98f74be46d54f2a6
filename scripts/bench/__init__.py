"""Benchmarks and long runs, each one module run from the repository's root
(`.venv/bin/python -m scripts.bench.<name> --help`): scale, ui, wide, soak,
ha (the Galera runs at full length) and adoption (the real Placement and
ours compared); and percentile(), which their reports share."""


def percentile(values, p):
    """The p-th percentile, interpolated between the two nearest samples
    (None for no samples)."""
    ordered = sorted(values)
    if not ordered:
        return None
    k = (len(ordered) - 1) * p / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)
