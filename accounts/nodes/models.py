"""Services, nodes and node assignments, mapped onto accounts/sql/0014_nodes.sql (``managed = False``).

Change them through accounts/nodes/services.py: the database keeps the load, the rules and the audit
trail, whoever writes.
"""

import re

from django.db import models
from django.db.models.functions import Now

# tokenserver's MAX_GENERATION: a retired account's rows carry it, and nothing goes past it.
MAX_GENERATION = 2**63 - 1
# What the tables' CHECKs and column types accept (accounts/sql/0014_nodes.sql). The services' checks
# refuse a value past them with a sentence rather than a CHECK violation (accounts/nodes/services.py),
# and the selectors look up no name that no row can hold.
SERVICE_NAME_MAX = 30
SERVICE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,29}")  # fullmatch: SERVICE_NAME_MAX characters at most
NODE_URL_MAX = 64
NODE_URL = re.compile(r"https?://[^\s/?#\x00]+[^\s?#\x00]*")
PATTERN_MAX = 128
INT_MAX = 2**31 - 1  # nodes' integer columns


class Service(models.Model):
    id = models.AutoField(primary_key=True)
    service = models.CharField(max_length=SERVICE_NAME_MAX, unique=True)
    pattern = models.CharField(max_length=PATTERN_MAX, null=True, blank=True)

    class Meta:
        managed = False
        db_table = "services"
        ordering = ["service"]

    def __str__(self):
        return self.service


class Node(models.Model):
    id = models.BigAutoField(primary_key=True)
    service = models.ForeignKey(Service, on_delete=models.DO_NOTHING, db_column="service", related_name="nodes")
    node = models.CharField(max_length=NODE_URL_MAX)
    available = models.IntegerField(db_default=0)
    current_load = models.IntegerField(db_default=0)
    capacity = models.IntegerField()
    downed = models.BooleanField(db_default=False)
    backoff = models.BooleanField(db_default=False)

    class Meta:
        managed = False
        db_table = "nodes"
        ordering = ["service", "node"]
        permissions = [
            ("manage_node", "Can take nodes down or into backoff and unassign them"),
        ]

    def __str__(self):
        return self.node

    def describe(self) -> str:
        """Its numbers and flags in one phrase, as the commands print them."""
        flags = "".join(f", {name}" for name in ("downed", "backoff") if getattr(self, name))
        return f"capacity {self.capacity}, available {self.available}, load {self.current_load}{flags}"

    @property
    def load_percent(self) -> int:
        """The load as a share of the capacity, for the admin's bars (over 100 once an operator lowers the
        capacity below the load, or sets the load higher)."""
        return round(100 * self.current_load / self.capacity) if self.capacity else 0


class NodeAssignment(models.Model):
    """One row per (service, account) and key generation: tokenserver's ``users`` row."""

    uid = models.BigAutoField(primary_key=True)
    service = models.ForeignKey(Service, on_delete=models.DO_NOTHING, db_column="service", related_name="+")
    # No constraint: an account's deletion neither waits for nor removes its assignments (docs/nodes.md).
    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_column="account",
        related_name="node_assignments",
    )
    node = models.ForeignKey(
        Node, on_delete=models.DO_NOTHING, null=True, blank=True, db_column="node", related_name="assignments"
    )
    generation = models.BigIntegerField(db_default=0)
    client_state = models.CharField(max_length=32, db_default="", blank=True)
    keys_changed_at = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    replaced_at = models.DateTimeField(null=True, blank=True)
    # The generation the row had when deprovisioning retired it (accounts/sql/0021_deprovision.sql):
    # what a reset after reprovisioning gives back.
    retired_generation = models.BigIntegerField(null=True, blank=True, editable=False)

    class Meta:
        managed = False
        db_table = "node_assignments"
        ordering = ["-created_at", "-uid"]

    def __str__(self):
        return f"assignment {self.uid}"
