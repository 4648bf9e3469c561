"""API clients: their keys, made once and stored as a digest only (platform_events/sql/0013_api.sql).

A key is ``lc_`` and 43 URL-safe characters (256 random bits). Only its SHA-256 is kept; the
first 11 characters (``key_prefix``) are kept too, so that staff can tell which key a client holds
without being able to use it. The key is shown once, to whoever made the client.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from platform_events.api.models import ApiClient, ApiScope
from platform_events.audit.context import audit_context
from platform_events.db.text import is_utf8
from platform_events.limits.counters import REFUSALS, Limit, LimitExceeded, bucket_for
from platform_events.refusals import Refused

KEY_PREFIX = "lc_"
SHOWN_CHARACTERS = 11  # "lc_" and 8 of the random part: 48 bits, enough to tell keys apart
NAME_MAX_LENGTH = 100  # the column's
# How often a client's last use is written: each call would otherwise update its row.
LAST_USED_EVERY = timedelta(seconds=60)


class ApiClientError(Refused):
    """A client that cannot be made or changed as asked; ``str()`` says why, in one sentence, and
    ``field`` names the input refused (name, scopes, reason), so that a form shows it beside it. A
    name another client has is ``api-client-name-taken``; a change of a revoked client is
    ``api-client-revoked``; a scope the person may not give is ``scope-not-yours``."""

    code = "invalid-api-client"
    status = 422


# What each scope lets a client do, as the back-office's permissions: whoever gives a client a scope
# must hold them all, so that nobody mints a key with powers they lack. None: superusers only
# (checking an end user's password is something no staff role does; a scope not listed is too).
SCOPE_POWERS: dict[str, tuple[str, ...] | None] = {
    ApiScope.ACCOUNTS_READ: ("accounts.view_account",),
    ApiScope.ACCOUNTS_WRITE: (
        "accounts.view_account",
        "accounts.add_account",
        "accounts.suspend_account",
        "accounts.resend_activation",
        "accounts.send_password_recovery",
    ),
    ApiScope.ACCOUNTS_DELETE: ("accounts.view_account", "accounts.deprovision_account"),
    ApiScope.ACCOUNTS_ERASE: ("accounts.view_account", "accounts.erase_account"),
    # An identity provider creates, suspends and deprovisions accounts: staff who may do all of it (as
    # with accounts:write, no role may create accounts: a superuser gives it).
    ApiScope.SCIM: (
        "accounts.view_account",
        "accounts.add_account",
        "accounts.suspend_account",
        "accounts.deprovision_account",
    ),
    ApiScope.SESSIONS: None,
    ApiScope.SESSIONS_CLIENT_ADDRESS: None,
}


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


@sensitive_variables("key")
def api_client_create(*, name: str, scopes: list[str], actor) -> tuple[ApiClient, str]:
    """Make a client; returns it and its key, which nothing can show again."""
    name = name.strip()
    if problem := api_client_name_problem(name):
        raise ApiClientError(problem, field="name")
    if problem := api_client_scopes_problem(scopes):
        raise ApiClientError(problem, field="scopes")
    if problem := scopes_beyond_actor(scopes, actor):
        raise ApiClientError(problem, field="scopes", code="scope-not-yours", status=403)
    taken = ApiClientError(
        f"api: there is already an API client named {name!r}", field="name", code="api-client-name-taken", status=409
    )
    if ApiClient.objects.filter(name__iexact=name).exists():
        raise taken
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic(), audit_context(actor=actor):
            client = ApiClient.objects.create(
                name=name,
                key_prefix=key[:SHOWN_CHARACTERS],
                key_hash=key_digest(key),
                scopes=sorted(set(scopes)),
                created_by=actor.get_username() if actor is not None else None,
            )
    except IntegrityError as error:
        # Two people adding one name at once both pass the check above; the unique index decides.
        if getattr(error.__cause__.diag, "constraint_name", None) != "api_clients_name_key":
            raise
        raise taken from None
    client.refresh_from_db()
    return client, key


def api_client_name_problem(name: str) -> str | None:
    """What the database would refuse in a client's name (ck_api_clients_name), said before it does."""
    if not name or len(name) > NAME_MAX_LENGTH:
        return f"api: a client's name is 1 to {NAME_MAX_LENGTH} characters"
    if not (name[0].isascii() and name[0].isalnum()) or not all(
        c.isascii() and (c.isalnum() or c in "._ -") for c in name
    ):
        return "api: a client's name starts with a letter or digit and holds only letters, digits, '.', '_', '-' and spaces"
    return None


def api_client_scopes_problem(scopes: list[str]) -> str | None:
    unknown = sorted(set(scopes) - set(ApiScope.values))
    if unknown:
        return f"api: unknown scope(s) {', '.join(unknown)}; the scopes are {', '.join(ApiScope.values)}"
    if not scopes:
        return f"api: give a client at least one scope ({', '.join(ApiScope.values)})"
    if ApiScope.SESSIONS_CLIENT_ADDRESS in scopes and ApiScope.SESSIONS not in scopes:
        return f"api: the scope {ApiScope.SESSIONS_CLIENT_ADDRESS} goes with {ApiScope.SESSIONS}, which checks the password"
    return None


def scopes_beyond_actor(scopes, actor) -> str | None:
    """Why ``actor`` may not give a client these scopes: one would let its key do what the actor may
    not. None when they may (an operator at the command line, ``actor`` None, may give any)."""
    if actor is None or actor.is_superuser:
        return None
    for scope in ApiScope:  # in the scopes' own order, so the sentence names the first
        if scope not in scopes:
            continue
        powers = SCOPE_POWERS.get(scope)
        if powers is None:
            return f"api: only a superuser may give a client the scope {scope}"
        if not actor.has_perms(powers):
            return f"api: you may not give a client the scope {scope}: its key could do what your role may not"
    return None


def api_client_change_scopes(*, client: ApiClient, scopes: list[str], actor) -> ApiClient:
    """Give the client these scopes instead of its own (its key stays); refused once it is revoked.
    A scope added must be one the actor may give; one the client had may stay or go."""
    if problem := api_client_scopes_problem(scopes):
        raise ApiClientError(problem, field="scopes")
    if problem := scopes_beyond_actor(set(scopes) - set(client.scopes), actor):
        raise ApiClientError(problem, field="scopes", code="scope-not-yours", status=403)
    wanted = sorted(set(scopes))
    with transaction.atomic(), audit_context(actor=actor):
        client.refresh_from_db(from_queryset=ApiClient.objects.select_for_update(no_key=True))
        if client.revoked_at is not None:
            raise ApiClientError(
                f"api: client {client.name!r} is revoked; its scopes cannot change",
                code="api-client-revoked",
                status=409,
            )
        if client.scopes == wanted:
            return client
        client.scopes = wanted
        client.save(update_fields=["scopes"])
    return client


def api_client_revoke(*, client: ApiClient, reason: str, actor, dry_run: bool = False) -> bool:
    """Revoke the client's key for good, with the reason; False when it was revoked already.
    ``dry_run``: refused as the real run would be, then whether it would revoke; nothing changes."""
    reason = reason.strip()
    if not reason:
        raise ApiClientError("api: say why the key is revoked", field="reason")
    if "\x00" in reason or not is_utf8(reason):  # a command line's stray bytes: PostgreSQL text cannot hold them
        raise ApiClientError("api: the reason is not valid text (UTF-8, no NUL)", field="reason")
    if dry_run:
        return client.revoked_at is None
    with transaction.atomic(), audit_context(actor=actor, reason=reason):
        revoked = ApiClient.objects.filter(pk=client.pk, revoked_at__isnull=True).update(
            revoked_at=Now(), revoked_reason=reason
        )
    client.refresh_from_db()
    return bool(revoked)


def api_client_by_key(key: str) -> ApiClient | None:
    """The unrevoked client whose key this is, its last use noted (at most once a minute); None for
    any other text."""
    if not _may_be_a_key(key):
        return None
    client = ApiClient.objects.filter(key_hash=key_digest(key), revoked_at__isnull=True).first()
    if client is not None:
        _note_use(client)
    return client


# The client's columns in its model's field order, so that a row builds the model (ApiClient.from_db):
# a plain cursor, not raw(), whose column matching and converters cost as much CPU as the statement.
CLIENT_FIELDS = ApiClient._meta.concrete_fields
CLIENT_ATTRIBUTES = [field.attname for field in CLIENT_FIELDS]

# The client and a hit on its rate limit, in one statement (one round trip). A revoked key matches
# nothing and counts nothing, from the statement after the revocation's commit: nothing is cached.
# The hit is counted as platform_events/limits/counters.py counts (COUNT_HITS), in the bucket of the
# key's digest: a client has one key for life. synchronous_commit is turned off for this statement's
# own transaction only (set_config(..., true)), when it is one: its commit does not wait for the WAL
# to reach the disk, so a crash may lose the last moment's hits (a client may then make a few calls
# more than its limit in that minute), and nothing else. A caller's transaction commits as it would.
CALLED_WITH = f"""
WITH client AS (
    SELECT {", ".join(field.column for field in CLIENT_FIELDS)}
    FROM api_clients WHERE key_hash = %(hash)s AND revoked_at IS NULL
), hit AS (
    INSERT INTO rate_limits (bucket, window_start, window_end, hits)
    SELECT %(bucket)s, window_start, window_start + %(seconds)s * interval '1 second', 1
    FROM client,
         to_timestamp(floor(extract(epoch FROM now()) / %(seconds)s) * %(seconds)s) AS window_start,
         (SELECT CASE WHEN %(own_transaction)s THEN set_config('synchronous_commit', 'off', true) END) AS commit_mode
    ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limits.hits + 1
    RETURNING hits, greatest(1, ceil(extract(epoch FROM window_end - now())))::integer AS retry_after
)
"""
CALLED = CALLED_WITH + "SELECT client.*, hit.hits, hit.retry_after FROM client, hit"
# The same, and a row the caller reads along (ReadAlong) in the same round trip. Its query runs only for
# a client within its limit that holds the scope: an unknown, revoked, over-limit or out-of-scope key
# reads nothing, as when the caller read it afterwards. OFFSET 0 keeps the subquery from being pulled up
# into the join, so that the gate is a one-time filter run before the read (pulled up into a join filter,
# the read would run and only its row be dropped).
CALLED_AND_READ = (
    CALLED_WITH
    + """
SELECT client.*, hit.hits, hit.retry_after, read.*
FROM client CROSS JOIN hit LEFT JOIN LATERAL (
    SELECT true, wanted.* FROM ({read}) AS wanted
    WHERE hit.hits <= %(max_hits)s AND %(scope)s = ANY (client.scopes)
    OFFSET 0
) AS read ON true
"""
)


@dataclass(frozen=True)
class ReadAlong:
    """One row that a request reads after its key and rate, read in their statement instead: ``sql``
    is a SELECT of at most one row, its parameters named in ``params``; ``scope`` is the one the request
    needs (a client without it reads nothing)."""

    scope: str
    sql: str
    params: dict


def api_client_called(key: str, *, limit: Limit) -> ApiClient | None:
    """The unrevoked client whose key this is, with one hit counted against ``limit`` for it, and its
    last use noted (at most once a minute); None for any other text, and nothing counted. Raises
    ``LimitExceeded`` when the hit is over the limit. Called on every API and SCIM request, outside a
    transaction (see CALLED)."""
    client, _ = api_client_called_reading(key, limit=limit, read=None)
    return client


def api_client_called_reading(
    key: str, *, limit: Limit, read: ReadAlong | None
) -> tuple[ApiClient | None, tuple | None]:
    """api_client_called(), and the row ``read`` reads, in one round trip: the row only for a client
    that holds ``read.scope`` within its limit (None for no row, or no such client)."""
    if not _may_be_a_key(key):
        return None, None
    digest = key_digest(key)
    params = {
        "hash": digest,
        "bucket": bucket_for(limit=limit, key=f"api-key:{digest.hex()}"),
        "seconds": limit.seconds,
        "own_transaction": not connection.in_atomic_block,
    }
    statement = CALLED
    if read is not None:
        if read.params.keys() & (params.keys() | {"max_hits", "scope"}):
            raise ValueError(f"ReadAlong: parameter names taken by the key's statement: {sorted(read.params)}")
        statement = CALLED_AND_READ.format(read=read.sql)
        params = {**params, "max_hits": limit.max_hits, "scope": read.scope, **read.params}
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if row is None:
        return None, None
    width = len(CLIENT_FIELDS)
    columns, hits, retry_after = row[:width], row[width], row[width + 1]
    client = ApiClient.from_db(connection.alias, CLIENT_ATTRIBUTES, columns)
    if hits > limit.max_hits:
        REFUSALS.labels(limit=limit.name).inc()
        raise LimitExceeded(limit=limit, retry_after=retry_after)
    _note_use(client)
    found = read is not None and row[width + 2]  # the read's leading true: its row, not the join's NULLs
    return client, row[width + 3 :] if found else None


def _may_be_a_key(key: str) -> bool:
    return key.startswith(KEY_PREFIX) and len(key) <= 200


def _note_use(client: ApiClient) -> None:
    # Asked of the row just read (this host's clock), then decided by the database's: one UPDATE a
    # minute, however many hosts and calls.
    if client.last_used_at is None or client.last_used_at < timezone.now() - LAST_USED_EVERY:
        stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=Now() - LAST_USED_EVERY)
        ApiClient.objects.filter(stale, pk=client.pk).update(last_used_at=Now())
