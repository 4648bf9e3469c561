"""Retention rules: what ``manage.py cleanup`` deletes, one rule per table that grows.

Each app declares its own rules (accounts/retention.py, tokens/retention.py); lifecycle/retention.py
lists them all with those of the libraries' tables. A rule counts what it would delete (for
``--dry-run``) and deletes one batch at a time, each batch a transaction of its own, so a long
cleanup holds no lock for long and stops cleanly between batches.
"""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RetentionRule:
    name: str  # as --only takes it: "sign-ups", "tokens", ...
    keeps: str  # what is kept, in a sentence fragment: "sign-ups never activated: 7 days"
    count: Callable[[], int]
    delete_batch: Callable[[int], int]  # deletes up to n rows; returns how many it deleted
