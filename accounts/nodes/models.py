"""Services, nodes and node assignments, mapped onto accounts/sql/0014_nodes.sql (``managed = False``).

Change them through accounts/nodes/services.py: the database keeps the load, the rules and the audit
trail, whoever writes.
"""

from django.db import models
from django.db.models.functions import Now


class Service(models.Model):
    id = models.AutoField(primary_key=True)
    service = models.CharField(max_length=30, unique=True)
    pattern = models.CharField(max_length=128, null=True, blank=True)

    class Meta:
        managed = False
        db_table = "services"
        ordering = ["service"]

    def __str__(self):
        return self.service


class Node(models.Model):
    id = models.BigAutoField(primary_key=True)
    service = models.ForeignKey(Service, on_delete=models.DO_NOTHING, db_column="service", related_name="nodes")
    node = models.CharField(max_length=64)
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
        """The load as a share of the capacity, for the admin's bars (over 100 is possible: see README)."""
        return round(100 * self.current_load / self.capacity) if self.capacity else 0


class NodeAssignment(models.Model):
    """One row per (service, account) and key generation: tokenserver's ``users`` row."""

    uid = models.BigAutoField(primary_key=True)
    service = models.ForeignKey(Service, on_delete=models.DO_NOTHING, db_column="service", related_name="+")
    # No constraint: an account's deletion neither waits for nor removes its assignments (README).
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

    class Meta:
        managed = False
        db_table = "node_assignments"
        ordering = ["-created_at", "-uid"]

    def __str__(self):
        return f"assignment {self.uid}"
