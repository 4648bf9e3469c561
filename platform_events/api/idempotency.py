"""Idempotency keys for the client API's POSTs (IETF draft "The Idempotency-Key HTTP Header Field"),
per client: the idempotency_keys table of platform_events/sql/0013_api.sql.

``run_once`` runs a request's work at most once per (client, key) and answers a retry with the first
response. One transaction holds it all: a try-lock on the key (a transaction-level advisory lock),
the key's row inserted (insert first, on conflict compare: two requests with one key never both
pass), the work, and its response stored in the row. One commit, then: a key has a stored response
and the effect behind it, or neither. (A refusal of the work rolls that transaction back, and is
stored under the key in a second one.) So:

* same key and request again, response stored: the stored response, marked ``Idempotent-Replayed: true``;
* same key, other request (method, path or body): 422 ``idempotency-key-reused``;
* same key while the first still runs (it holds the lock): 409 ``request-in-progress``, at once;
* the first died (killed, connection lost) before it committed: nothing of it stands, its key
  included, and a retry runs the work;
* the work failed on an error of ours (a 500): all rolled back, the key with it, so the retry runs
  it again. What is stored is every answer the work gave: a success, or a refusal of the lifecycle
  rules (login taken, wrong state). A request refused before its work starts (its key, scope, body
  or rate) leaves no row.

No request here commits a row still running (``lease_claim``, ``lease_until`` set): one that a
release committing the key before its work left behind during an upgrade is answered 409 until its
lease ends, then taken over by a retry of the same request.
"""

import json
import re
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection, transaction
from django.http import HttpResponse
from django.utils.crypto import salted_hmac

from platform_events.api.problems import MEDIA_TYPE, Problem
from platform_events.db.savepoints import savepoints_skipped

KEY_CHARACTER = r"[A-Za-z0-9_-]"
KEY_PATTERN = KEY_CHARACTER + "{32,128}"  # the OpenAPI schema's pattern is built from it too
KEY = re.compile(KEY_PATTERN)
REPLAYED_HEADER = "Idempotent-Replayed"
# A key whose row vanished between two statements (released, or expired and swept) is tried again.
ATTEMPTS = 3

# The key's lock and its row in one statement. The lock tells a request still running (its row is not
# committed, so not seen) at once, instead of the INSERT waiting for that request's commit.
INSERT_FIRST = """
WITH locked AS (
    SELECT pg_try_advisory_xact_lock(hashtextextended('idempotency:' || %(client)s || ':' || %(key)s, 0)) AS free
), inserted AS (
    INSERT INTO idempotency_keys (client_id, key, request_hash, lease_claim, lease_until, expires_at)
    SELECT %(client)s, %(key)s, %(hash)s, %(claim)s, now() + %(lease)s, now() + %(ttl)s FROM locked WHERE free
    ON CONFLICT (client_id, key) DO NOTHING
    RETURNING 1
)
SELECT free, EXISTS (SELECT FROM inserted) FROM locked
"""
# The key is free again when it expired (not yet swept), or when the request that holds it for this
# same request died: its lease ended with no response stored.
# SKIP LOCKED: a request still running past its lease holds its row; a retry is then told 409 at
# once, rather than waiting on that lock for as long as the slow request takes.
TAKE_OVER = """
UPDATE idempotency_keys k
SET request_hash = %(hash)s, lease_claim = %(claim)s, lease_until = now() + %(lease)s,
    response_status = NULL, response_body = NULL, created_at = now(), expires_at = now() + %(ttl)s
FROM (
    SELECT client_id, key FROM idempotency_keys
    WHERE client_id = %(client)s AND key = %(key)s
      AND (expires_at <= now() OR (response_status IS NULL AND lease_until <= now() AND request_hash = %(hash)s))
    FOR UPDATE SKIP LOCKED
) free
WHERE k.client_id = free.client_id AND k.key = free.key
RETURNING 1
"""
HOLDER = """
SELECT request_hash, response_status, response_body::text,
       greatest(1, ceil(extract(epoch FROM lease_until - now())))::integer
FROM idempotency_keys WHERE client_id = %(client)s AND key = %(key)s
"""
STORE = """
UPDATE idempotency_keys SET response_status = %(status)s, response_body = %(body)s::jsonb, lease_claim = NULL, lease_until = NULL
WHERE client_id = %(client)s AND key = %(key)s AND lease_claim = %(claim)s
RETURNING response_body::text
"""


@dataclass(frozen=True)
class Outcome:
    """What a request's work answered: its status and JSON body."""

    status: int
    body: dict


def idempotency_key(header: str | None) -> str:
    """The key an Idempotency-Key header carries: the draft's quoted string ("...") or the bare key,
    32-128 of [A-Za-z0-9_-]. A Problem (400) when it is missing or malformed."""
    if header is None or not header.strip():
        raise Problem("idempotency-key-missing", "send an Idempotency-Key header: 32-128 of A-Z a-z 0-9 _ -")
    value = header.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if not KEY.fullmatch(value):
        raise Problem(
            "idempotency-key-malformed",
            f"the Idempotency-Key must be 32-128 characters of A-Z a-z 0-9 _ - (this one has {len(value)} characters"
            f"{'' if value.isascii() and re.fullmatch(f'{KEY_CHARACTER}*', value) else ', some of them not allowed'})",
        )
    return value


def request_fingerprint(*, method: str, path: str, body: bytes) -> str:
    """HMAC-SHA256 hex of the request a key stands for: its method, path and body. A JSON body is read
    as JSON (the same object sent with other spacing or key order is the same request).

    Keyed with SECRET_KEY, because the body may hold a password: a plain digest kept 24 hours beside
    the account's login and address would confirm a guess of it with one SHA-256. (Rotating
    SECRET_KEY makes a retry of a request sent before it a 422 until its key expires.)"""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python reads
        canonical = body
    return salted_hmac(
        "lifecycle.idempotency", method.encode() + b"\n" + path.encode() + b"\n" + canonical, algorithm="sha256"
    ).hexdigest()


def run_once(
    *,
    client_id: int,
    key: str,
    fingerprint: str,
    work: Callable[[], Outcome],
    lease: timedelta,
    ttl: timedelta,
    savepoints: bool = True,
) -> HttpResponse:
    """Run ``work`` once for this client's ``key``, or answer as the key's first request did (see the
    module). ``work`` runs inside the key's transaction; a Problem it raises is its answer (stored like
    a success, its effects rolled back), any other exception rolls everything back and goes up.

    ``savepoints=False`` for work that never goes on after a failed statement: the atomic blocks in it
    (the services' own) then make no savepoint, two round trips less each, since any failure rolls the
    key's transaction back whole (platform_events/db/savepoints.py).

    Call it outside a transaction (views run in autocommit): inside one, the key and the work would
    commit with the caller's, not on their own."""
    params = {"client": client_id, "key": key, "hash": fingerprint, "claim": uuid.uuid4(), "lease": lease, "ttl": ttl}
    try:
        return _under_the_key(work, params, savepoints=savepoints)
    except _Refused as refused:
        outcome = refused.outcome
    # Rolled back, the key with it (no savepoint on the way of a success); the refusal is stored under
    # the key on its own, unless a retry took the key meanwhile: then its answer is the key's.
    return _under_the_key(lambda: outcome, params, savepoints=True)


class _Refused(Exception):
    """The work's refusal, carried out of the key's transaction so that the transaction rolls back."""

    def __init__(self, outcome: Outcome):
        super().__init__(outcome.status)
        self.outcome = outcome


def _under_the_key(work: Callable[[], Outcome], params: dict, *, savepoints: bool) -> HttpResponse:
    """In one transaction: the key taken, ``work`` and its response stored; or the key's holder answered."""
    with transaction.atomic():
        for _ in range(ATTEMPTS):
            with connection.cursor() as cursor:
                cursor.execute(INSERT_FIRST, params)
                free, taken = cursor.fetchone()
                if not free:
                    raise Problem(
                        "request-in-progress",
                        "the first request with this Idempotency-Key is still running; retry later",
                        headers={"Retry-After": "1"},
                    )
                if not taken:
                    cursor.execute(TAKE_OVER, params)
                    taken = cursor.fetchone() is not None
                if taken:
                    return _run(work, params, savepoints=savepoints)
                cursor.execute(HOLDER, params)
                holder = cursor.fetchone()
            if holder is not None:
                return _answer_held(holder, params["hash"])
    raise Problem("request-in-progress", "this Idempotency-Key is changing hands; retry", headers={"Retry-After": "1"})


def _answer_held(holder, fingerprint: str) -> HttpResponse:
    request_hash, status, body, lease_left = holder
    if request_hash != fingerprint:
        raise Problem(
            "idempotency-key-reused",
            "this Idempotency-Key was first sent with another request (method, path or body); use a new key",
        )
    if status is None:
        raise Problem(
            "request-in-progress",
            "the first request with this Idempotency-Key is still running; retry later",
            headers={"Retry-After": str(lease_left)},
        )
    response = _response(status, body)  # the stored text, as the first answer sent it
    response[REPLAYED_HEADER] = "true"
    return response


def _run(work: Callable[[], Outcome], params: dict, *, savepoints: bool) -> HttpResponse:
    """The work and its stored response, in the key's transaction (the caller's atomic block)."""
    try:
        with nullcontext() if savepoints else savepoints_skipped():
            outcome = work()
    except Problem as refusal:
        raise _Refused(Outcome(refusal.status, refusal.body())) from None
    with connection.cursor() as cursor:
        cursor.execute(STORE, {**params, "status": outcome.status, "body": json.dumps(outcome.body)})
        (stored,) = cursor.fetchone()
    return _response(outcome.status, stored)


def _response(status: int, body: str) -> HttpResponse:
    # As django-ninja writes its own answers (a GET's), so that a client sees one media type.
    content_type = MEDIA_TYPE if status >= 400 else "application/json; charset=utf-8"
    return HttpResponse(body, status=status, content_type=content_type)
