import re
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Case, CharField, Count, DateTimeField, ExpressionWrapper, F, Func, Q, QuerySet, Value, When
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce, Lower
from django.db.models.lookups import Contains, EndsWith, Exact, StartsWith

from accounts.models import Account, AccountStatus
from platform_events.audit.models import AuditAction, AuditEvent, ResourceType
from platform_events.db.estimates import EXACT_COUNT_LIMIT, estimated_rows


def account_by_id(account_id: int) -> Account | None:
    # get(), not filter().first(): no ORDER BY for the one row an id can match (0.08 ms of CPU less per
    # API read, docs/measurements.md).
    try:
        return Account.objects.get(pk=account_id)
    except Account.DoesNotExist:
        return None


# account_by_id()'s read as SQL, for a caller that sends it inside a statement of its own (the API's
# key and rate): the account's columns in its model's field order, so that the row builds the account.
ACCOUNT_FIELDS = Account._meta.concrete_fields
ACCOUNT_BY_ID = f"SELECT {', '.join(field.column for field in ACCOUNT_FIELDS)} FROM accounts WHERE id = %(account_id)s"


def account_from_row(row: tuple) -> Account:
    """The account an ACCOUNT_BY_ID row holds."""
    return Account.from_db(connection.alias, [field.attname for field in ACCOUNT_FIELDS], row)


def accounts_by_identifier(identifier: str) -> QuerySet[Account]:
    """Accounts whose e-mail (when ``identifier`` holds an @) or else login is ``identifier``, ignoring case.

    Logins cannot hold an @ (accounts/sql/0007_address_rules.sql), so an identifier is one or the
    other, never both: otherwise a login that looks like someone's address would get their recovery
    e-mail. Both sides go through the database's lower(), the expression the indexes are built on.
    """
    identifier = identifier.strip()
    if "\x00" in identifier:  # names nobody; PostgreSQL text cannot even hold it (a DataError)
        return Account.objects.none()
    if "@" in identifier:
        return Account.objects.alias(email_lower=Lower("email")).filter(email_lower=Lower(Value(identifier)))
    return accounts_by_login(identifier)


def accounts_by_login(login: str) -> QuerySet[Account]:
    """Accounts whose login is ``login``, ignoring case (through lower(), as the index is built)."""
    login = login.strip()
    if "\x00" in login:  # names nobody; PostgreSQL text cannot even hold it (a DataError)
        return Account.objects.none()
    return Account.objects.alias(login_lower=Lower("login")).filter(login_lower=Lower(Value(login)))


def accounts_looked_up(*, email: str | None = None, login: str | None = None, limit: int) -> list[Account]:
    """The newest ``limit`` accounts whose e-mail is ``email`` or, when no e-mail is given, whose login
    is ``login``, ignoring case. Text without an @ is no e-mail, and names nobody as one."""
    if email is not None:
        found = accounts_by_identifier(email) if "@" in email else Account.objects.none()
    else:
        found = accounts_by_login(login)
    return list(found.order_by("-id")[:limit])


def accounts_by_reference(reference: str) -> QuerySet[Account]:
    """The accounts an operator's ``reference`` names: the account whose id it is (all digits), and the
    accounts whose login or e-mail it is (accounts_by_identifier). More than one is possible: a login
    of digits beside an id, or an e-mail that unverified sign-ups share; the caller says which."""
    by_name = accounts_by_identifier(reference)
    digits = reference.strip()
    # Ids are bigints: more digits than that name no id (and would overflow the query).
    if digits.isascii() and digits.isdigit() and len(digits) <= 18:
        return Account.objects.filter(Q(pk=int(digits)) | Q(pk__in=by_name.values("pk")))
    return by_name


def account_trail(account_id: int) -> QuerySet[AuditEvent]:
    """The audit rows about one account: its own and its tokens' (which name the account in their
    diff, tokens/sql/0013_audit_by_account.sql: the expression below is that index's, so both halves
    of the OR read an index)."""
    named = str(account_id)
    token_account = Coalesce(KeyTextTransform("account", "diff_after"), KeyTextTransform("account", "diff_before"))
    return AuditEvent.objects.alias(token_account=token_account).filter(
        Q(resource_type=ResourceType.ACCOUNT, resource_id=named)
        | Q(resource_type=ResourceType.TOKEN, token_account=named)
    )


def account_trail_latest(account_id: int, count: int) -> list[AuditEvent]:
    """The newest ``count`` rows of the account's trail, newest first.

    Ordered by an expression of the time rather than the column: under a small LIMIT the planner
    otherwise walks every partition's primary key backwards, filtering for the account, instead of
    reading the two indexes and sorting the few rows they hold (0.86 s against 12 ms for an account
    page at 3,000,000 audit rows, bench/admin.py).
    """
    newest_first = ExpressionWrapper(F("occurred_at") + Value(timedelta(0)), output_field=DateTimeField()).desc()
    return list(account_trail(account_id).order_by(newest_first)[:count])


def account_suspension(account_id: int) -> AuditEvent | None:
    """The audit row of the account's latest suspension (who, when, why), if the trail holds one."""
    return _latest_move(account_id, AuditAction.ACCOUNT_SUSPENDED)


def account_deprovisioning(account_id: int) -> AuditEvent | None:
    """The audit row of the account's latest deprovisioning (who, when, why), if the trail holds one."""
    return _latest_move(account_id, AuditAction.ACCOUNT_DEPROVISIONED)


def account_erasure(account_id: int) -> AuditEvent | None:
    """The audit row of the account's erasure (who, when, why), if the trail holds one."""
    return _latest_move(account_id, AuditAction.ACCOUNT_ERASED)


def _latest_move(account_id: int, action: AuditAction) -> AuditEvent | None:
    rows = AuditEvent.objects.filter(resource_type=ResourceType.ACCOUNT, resource_id=str(account_id), action=action)
    return rows.order_by("-occurred_at").first()


def email_is_claimed(email: str) -> bool:
    """Whether an activated account holds this address, ignoring case: activating claims an address for
    that account alone, while unactivated sign-ups may share one."""
    return (
        Account.objects.alias(email_lower=Lower("email"))
        .filter(email_lower=Lower(Value(email.strip())), activated_at__isnull=False)
        .exists()
    )


# Staff's search. A term is matched in three tiers, read in this order: exact, then the
# start, then any other part of a login or e-mail. The last needs a trigram index
# (accounts/sql/0012_substring_search.sql), which narrows nothing without 3 letters or digits in a row.
SUBSTRING_MIN_RUN = re.compile(r"[a-z0-9]{3}")
# No login or e-mail is longer (accounts/sql/0007_address_rules.sql): a longer term finds nobody.
LONGEST_VALUE = 254


def _search_tiers(term: str) -> list[Q]:
    """The conditions of the search tiers for ``term``, best first; each tier's rows are also in the
    next one's condition (an exact value starts with itself), so ``tiers[-1]`` is the whole match."""
    term = term.strip().lower()
    # Nothing holds a NUL (PostgreSQL text cannot even take it: a DataError), nor so long a value.
    if not term or "\x00" in term or len(term) > LONGEST_VALUE:
        return []
    email, login = Lower("email"), Lower("login")
    # Django's pattern lookups escape %, _ and \ in the term: they are matched as themselves.
    tiers = [
        Q(Exact(email, term)) | Q(Exact(login, term)),
        Q(StartsWith(email, term)) | Q(StartsWith(login, term)),
    ]
    if SUBSTRING_MIN_RUN.search(term):
        tiers.append(_email_holds(term) | _login_holds(term))
    return tiers


def _email_part(number: int) -> Func:
    """The local part (1) or the domain (2) of a lower-cased address: the expressions of the
    trigram indexes (accounts/sql/0012_substring_search.sql)."""
    return Func(Lower("email"), Value("@"), Value(number), function="split_part", output_field=CharField())


def _email_holds(term: str) -> Q:
    """An address holds ``term`` (lower case) anywhere, asked part by part: every address has one @
    (accounts/sql/0001 and 0007), so a term without @ lies in one part, and "b@a" is a local part
    ending with b and a domain starting with a."""
    local, domain = _email_part(1), _email_part(2)
    if "@" not in term:
        return Q(Contains(local, term)) | Q(Contains(domain, term))
    before, _, after = term.partition("@")
    if "@" in after:
        return Q(pk__in=[])  # no address holds two @
    holds = Q()
    if before:
        holds &= Q(EndsWith(local, before))
    if after:
        holds &= Q(StartsWith(domain, after))
    return holds


def _login_holds(term: str) -> Q:
    # Logins cannot hold an @ (accounts/sql/0007_address_rules.sql, as accounts_by_identifier says):
    # a term with one is an address's, and the login index would only read its common trigrams.
    return Q(pk__in=[]) if "@" in term else Q(Contains(Lower("login"), term))


def accounts_search(queryset: QuerySet[Account], term: str) -> QuerySet[Account]:
    """Accounts whose e-mail or login is ``term``, starts with it, or (for a term with 3 letters or
    digits in a row) holds it anywhere, ignoring case; every tier is read from an index. A term with
    fewer letters or digits in a row matches only the start (a trigram index cannot narrow it)."""
    tiers = _search_tiers(term)
    return queryset.filter(tiers[-1]) if tiers else queryset.none()


def accounts_search_order(term: str) -> list:
    """The order of a search's results: exact matches, then prefix matches, then the rest, each
    newest first. Sorting by it reads every match: page a large result with accounts_search_tiers."""
    tiers = _search_tiers(term)
    rank = Case(*(When(tier, then=Value(n)) for n, tier in enumerate(tiers[:-1])), default=Value(len(tiers) - 1))
    return [rank.asc(), "-id"] if tiers else ["-id"]


def accounts_search_tiers(queryset: QuerySet[Account], term: str) -> list[QuerySet[Account]]:
    """accounts_search's results as disjoint querysets in accounts_search_order, each newest first:
    a page of the first rows reads about as many rows, however many accounts match (a common term
    such as example.com matches them all)."""
    tiers = _search_tiers(term)
    ordered, earlier = [], None
    for tier in tiers:
        ordered.append(queryset.filter(tier if earlier is None else tier & ~earlier).order_by("-id"))
        earlier = tier
    return ordered


# The periodic cleanup's abandoned sign-ups: never activated, with no token issued and not unsuspended
# by staff since the cut-off.
# ABANDONED is the condition on a row ``a`` of accounts.
ABANDONED = """
    a.status = 'provisioned' AND a.activated_at IS NULL AND a.created_at < %(before)s
    AND (a.unsuspended_at IS NULL OR a.unsuspended_at < %(before)s)
    AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.account = a.id AND t.created_at >= %(before)s)
"""
ABANDONED_SIGN_UPS = f"SELECT id FROM accounts a WHERE {ABANDONED}"


def abandoned_sign_ups_count(*, created_before: datetime) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({ABANDONED_SIGN_UPS}) abandoned", {"before": created_before})
        return cursor.fetchone()[0]


def sign_up_problems(*, email: str, login: str) -> dict[str, str]:
    """What the database would refuse in this e-mail and login (accounts/sql/0007_address_rules.sql,
    asked rather than repeated), by field, and whether the login is taken (logins are public names;
    whether an address is known never shows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT accounts_email_problem(%s), accounts_login_problem(%s),"
            " EXISTS (SELECT 1 FROM accounts WHERE lower(login) = lower(%s))",
            [email, login, login],
        )
        email_problem, login_problem, taken = cursor.fetchone()
    problems = {"email": email_problem, "login": login_problem or ("login is taken" if taken else None)}
    return {field: problem for field, problem in problems.items() if problem}


def email_problem(email: str) -> str | None:
    """What the account rules find wrong with an address ("e-mail is not a valid address ..."), or None."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT accounts_email_problem(%s)", [email])
        return cursor.fetchone()[0]


def problem_sentence(problem: str) -> str:
    """A problem sign_up_problems() names ("e-mail is not a valid address ...") as the sentence the
    public pages and the API show ("E-mail is not a valid address ....")."""
    return f"{problem[0].upper()}{problem[1:]}."


def account_counts_by_status(*, exact_below: int = EXACT_COUNT_LIMIT) -> tuple[dict[str, int], bool]:
    """Accounts per status, every status named, and whether they are estimated: counted while the table
    holds fewer than ``exact_below`` rows, estimated from the planner's statistics on a larger one."""
    if estimated_rows("accounts") < exact_below:
        counted = dict(Account.objects.order_by().values_list("status").annotate(Count("id")))
        return {status: counted.get(status, 0) for status in AccountStatus.values}, False
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT v::text, round(f * (SELECT reltuples FROM pg_class WHERE oid = 'accounts'::regclass))::bigint
            FROM pg_stats, unnest(most_common_vals::text::text[], most_common_freqs) AS m(v, f)
            WHERE tablename = 'accounts' AND attname = 'status'
            """
        )
        estimated = dict(cursor.fetchall())
    # Statuses too rare to be among the most common values share what the common ones leave.
    rare = [status for status in AccountStatus.values if status not in estimated]
    left = max(estimated_rows("accounts") - sum(estimated.values()), 0)
    return {
        status: estimated.get(status, round(left / len(rare)) if rare else 0) for status in AccountStatus.values
    }, True
