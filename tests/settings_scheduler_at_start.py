"""The product's settings, with django-q2's guard loop turning every 30 s, for the test that waits on
the cluster's own scheduler (tests/tokens/test_tasks.py). The Sentinel calls the scheduler once a
counter it advances by guard_cycle each turn reaches 30: at 30 that is its first turn, as the cluster
comes up, instead of 30 s after it (at the default 0.5 s a turn, 60 turns)."""

from lifecycle.settings import *  # noqa: F403

Q_CLUSTER = {**Q_CLUSTER, "guard_cycle": 30}  # noqa: F405
