"""Benchmarks: scripts that measure the product and print their figures (docs/measurements.md); none
asserts on a time. Each runs as ``.venv/bin/python bench/<name>.py`` or ``python -m bench.<name>``.

Run as a file, a script first puts the repository on ``sys.path`` (Python puts ``bench/`` there
instead), then ``import bench.django_setup`` sets Django up for it; ``bench.scratch.scratch_database()`` gives
it a database of its own.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
