"""Idempotency keys for the client API's POSTs (IETF draft "The Idempotency-Key HTTP Header Field"),
per client: the idempotency_keys table of platform_events/sql/0013_api.sql.

``run_once`` runs a request's work at most once per (client, key) and answers a retry with the first
response. The row is inserted first, in its own transaction (insert first, on conflict compare: two
requests with one key never both pass), holding a lease. The work then runs in one
transaction with the row locked, and the response is stored in that same transaction: a key either
has a stored response and the effect behind it, or neither. So:

* same key and request again, response stored: the stored response, marked ``Idempotent-Replayed: true``;
* same key, other request (method, path or body): 422 ``idempotency-key-reused``;
* same key while the first still runs (its lease unexpired): 409 ``request-in-progress``;
* the first died (killed, connection lost) before it committed: nothing of it stands, and once its
  lease ends a retry takes the key over and runs the work;
* the work failed on an error of ours (a 500): rolled back, and the key released at once, so the
  retry runs it again. What is stored is every answer the work gave: a success, or a refusal of the
  lifecycle rules (login taken, wrong state). A request refused before its work starts (its key,
  scope, body or rate) leaves no row.
"""

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection, transaction
from django.http import HttpResponse
from django.utils.crypto import salted_hmac

from platform_events.api.problems import MEDIA_TYPE, Problem

KEY_CHARACTER = r"[A-Za-z0-9_-]"
KEY_PATTERN = KEY_CHARACTER + "{32,128}"  # the OpenAPI schema's pattern is built from it too
KEY = re.compile(KEY_PATTERN)
REPLAYED_HEADER = "Idempotent-Replayed"
# A key whose row vanished between two statements (released, or expired and swept) is tried again.
ATTEMPTS = 3

INSERT_FIRST = """
INSERT INTO idempotency_keys (client_id, key, request_hash, lease_claim, lease_until, expires_at)
VALUES (%(client)s, %(key)s, %(hash)s, %(claim)s, now() + %(lease)s, now() + %(ttl)s)
ON CONFLICT (client_id, key) DO NOTHING
RETURNING 1
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
LOCK_MINE = "SELECT 1 FROM idempotency_keys WHERE client_id = %(client)s AND key = %(key)s AND lease_claim = %(claim)s FOR UPDATE"
STORE = """
UPDATE idempotency_keys SET response_status = %(status)s, response_body = %(body)s::jsonb, lease_claim = NULL, lease_until = NULL
WHERE client_id = %(client)s AND key = %(key)s AND lease_claim = %(claim)s
RETURNING response_body::text
"""
RELEASE = "DELETE FROM idempotency_keys WHERE client_id = %(client)s AND key = %(key)s AND lease_claim = %(claim)s"


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
    *, client_id: int, key: str, fingerprint: str, work: Callable[[], Outcome], lease: timedelta, ttl: timedelta
) -> HttpResponse:
    """Run ``work`` once for this client's ``key``, or answer as the key's first request did (see the
    module). ``work`` runs inside a transaction; a Problem it raises is its answer (stored like a
    success), any other exception releases the key and goes up.

    Call it outside a transaction (views run in autocommit): inside one, the key is not seen by a
    concurrent request until the caller commits, and that request waits for it instead of a 409."""
    claim = uuid.uuid4()
    params = {"client": client_id, "key": key, "hash": fingerprint, "claim": claim, "lease": lease, "ttl": ttl}
    for _ in range(ATTEMPTS):
        with connection.cursor() as cursor:
            cursor.execute(INSERT_FIRST, params)
            taken = cursor.fetchone() is not None
            if not taken:
                cursor.execute(TAKE_OVER, params)
                taken = cursor.fetchone() is not None
            if taken:
                return _run(work, params)
            cursor.execute(HOLDER, params)
            holder = cursor.fetchone()
        if holder is not None:
            return _answer_held(holder, fingerprint)
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


def _run(work: Callable[[], Outcome], params: dict) -> HttpResponse:
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                # Ours still: a request that waited past its lease may have lost the key to a retry.
                cursor.execute(LOCK_MINE, params)
                if cursor.fetchone() is None:
                    raise Problem(
                        "request-in-progress",
                        "this request took longer than its lease and a retry took its Idempotency-Key over",
                        headers={"Retry-After": "1"},
                    )
            try:
                with transaction.atomic():
                    outcome = work()
            except Problem as refusal:
                outcome = Outcome(refusal.status, refusal.body())
            with connection.cursor() as cursor:
                cursor.execute(STORE, {**params, "status": outcome.status, "body": json.dumps(outcome.body)})
                (stored,) = cursor.fetchone()
    except Problem:
        raise
    except BaseException:
        # Rolled back: nothing was done, so the next retry may run it at once.
        _release(params)
        raise
    return _response(outcome.status, stored)


def _release(params: dict) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute(RELEASE, params)
    except Exception:  # the database is gone too: the lease will end by itself
        pass


def _response(status: int, body: str) -> HttpResponse:
    # As django-ninja writes its own answers (a GET's), so that a client sees one media type.
    content_type = MEDIA_TYPE if status >= 400 else "application/json; charset=utf-8"
    return HttpResponse(body, status=status, content_type=content_type)
