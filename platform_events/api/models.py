"""API clients and their idempotency keys (platform_events/sql/0013_api.sql)."""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Now


class ApiScope(models.TextChoices):
    """What an API client may do (platform_events/sql/0029_scim_scope.sql lists the same)."""

    ACCOUNTS_READ = "accounts:read", "accounts:read (read and look up accounts)"
    ACCOUNTS_WRITE = "accounts:write", "accounts:write (provision, suspend, unsuspend, send e-mails)"
    ACCOUNTS_DELETE = "accounts:delete", "accounts:delete (deprovision accounts)"
    ACCOUNTS_ERASE = "accounts:erase", "accounts:erase (with accounts:delete: erase deprovisioned accounts at once)"
    SESSIONS = "sessions", "sessions (check a password for sign-in)"
    # Trusted to say whose address a password check comes from (it counts failures per name and address).
    SESSIONS_CLIENT_ADDRESS = (
        "sessions:client-address",
        "sessions:client-address (with sessions: say the signing-in person's IP address)",
    )
    # An identity provider's SCIM 2.0 provisioning (docs/scim.md).
    SCIM = "scim", "scim (an identity provider: read, create, change, deactivate and delete accounts by SCIM 2.0)"


class ApiClient(models.Model):
    """A service that calls the client API with a bearer key. Only the key's SHA-256 is stored
    (platform_events/api/clients.py makes and checks keys); a revoked client stays revoked."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=100, unique=True)
    key_prefix = models.CharField("key starts with", max_length=16, editable=False)
    key_hash = models.BinaryField(editable=False)
    scopes = ArrayField(models.TextField(choices=ApiScope))
    created_at = models.DateTimeField(db_default=Now())
    last_used_at = models.DateTimeField("last used", null=True, editable=False)
    revoked_at = models.DateTimeField(null=True, editable=False)
    revoked_reason = models.TextField(null=True, blank=True, editable=False)
    # The staff login that made it (None: an operator at the command line); named beside the client
    # in every audit row of its acts.
    created_by = models.CharField("made by", max_length=150, null=True, editable=False)

    class Meta:
        managed = False
        db_table = "api_clients"
        ordering = ["name"]
        verbose_name = "API client"

    # A call made with its key is audited as api-client:<id>, actor type SERVICE (platform_events/audit/context.py).
    audit_kind = "api-client"

    def __str__(self):
        return self.name

    def get_username(self) -> str:
        """The name the audit trail shows for this client when it acts (``actor_display``): its own,
        and the person who made it."""
        return (f"{self.name}, made by {self.created_by}" if self.created_by else self.name)[:255]  # the column's


class IdempotencyKey(models.Model):
    """A client's Idempotency-Key and the response it was first answered with (platform_events/api/idempotency.py)."""

    # The key is (client_id, key); Django is given a composite primary key.
    pk = models.CompositePrimaryKey("client_id", "key")
    client = models.ForeignKey(ApiClient, on_delete=models.DO_NOTHING, related_name="+")
    key = models.CharField(max_length=128)
    request_hash = models.CharField(max_length=64)
    response_status = models.IntegerField(null=True)
    response_body = models.JSONField(null=True)
    lease_claim = models.UUIDField(null=True)
    lease_until = models.DateTimeField(null=True)
    created_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "idempotency_keys"

    def __str__(self):
        return f"{self.client_id}: {self.key[:8]}…"
