"""The services' refusals as the API's problem types (lifecycle/api/refusals.py). Every refusal's code
is kebab-case, and one that names a problem type has that type's status, so that the API answers it
without renaming; a code the catalogue lacks is answered as the generic refused."""

import datetime
import re

import pytest

import accounts.errors
import accounts.nodes.errors
import lifecycle.audit_trail.export
import platform_events.api.clients
import platform_events.limits.counters
import platform_events.webhooks.endpoints
import tokens.errors
from accounts.errors import AlreadySuspended
from accounts.nodes.errors import InvalidKeysChangedAt, InvalidUpdate, NoCapacity, Retired, UnknownName
from lifecycle.api.refusals import as_node_problem, as_problem
from platform_events.api.problems import CATALOGUE, Problem
from platform_events.refusals import Refused
from tokens.errors import TokenExpired

ERROR_MODULES = [accounts.errors, accounts.nodes.errors, tokens.errors, platform_events.webhooks.endpoints]
ERROR_MODULES += [platform_events.api.clients, platform_events.limits.counters, lifecycle.audit_trail.export]
KEBAB_CASE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def product_refusals() -> list[type[Refused]]:
    """Refused and every subclass the product defines (not the tests' own)."""
    found, todo = [], [Refused]
    while todo:
        kind = todo.pop()
        todo.extend(kind.__subclasses__())
        if not kind.__module__.startswith("tests."):
            found.append(kind)
    return sorted(found, key=lambda kind: f"{kind.__module__}.{kind.__qualname__}")


REFUSALS = product_refusals()


def named(kind: type[Refused]) -> str:
    return kind.__qualname__


def problem(work, refusal: Refused) -> Problem:
    with pytest.raises(Problem) as raised, work():
        raise refusal
    return raised.value


def test_every_apps_error_module_is_walked():
    assert {kind.__module__ for kind in REFUSALS} >= {module.__name__ for module in ERROR_MODULES}


@pytest.mark.parametrize("kind", REFUSALS, ids=named)
def test_every_code_is_kebab_case(kind):
    assert KEBAB_CASE.match(kind.code), kind.code


@pytest.mark.parametrize("kind", [kind for kind in REFUSALS if kind.code in CATALOGUE], ids=named)
def test_a_code_that_is_a_problem_type_has_its_status(kind):
    assert kind.status == CATALOGUE[kind.code].status


def test_a_refusal_is_answered_as_the_problem_type_its_code_names_with_whose_account_and_its_state():
    answer = problem(as_problem, AlreadySuspended("accounts: account 7 is already suspended", account_id=7, state="x"))
    assert answer.body() == {
        "type": "/api/v1/problems/already-suspended",
        "title": "The account is already suspended",
        "status": 409,
        "detail": "accounts: account 7 is already suspended",
        "account_id": 7,
        "state": "x",
    }


def test_a_code_the_catalogue_lacks_is_answered_as_refused():
    answer = problem(as_problem, TokenExpired("tokens: this link is no longer valid"))
    assert (answer.type.slug, answer.status, answer.detail) == ("refused", 409, "tokens: this link is no longer valid")


def test_no_capacity_says_when_to_try_again():
    answer = problem(as_node_problem, NoCapacity("nodes: no node of service sync-1.5 has capacity left"))
    assert (answer.type.slug, answer.status, answer.headers) == ("no-capacity", 503, {"Retry-After": "300"})


def test_a_refused_report_carries_tokenserver_s_code_beside_the_problem_type():
    answer = problem(as_node_problem, InvalidKeysChangedAt("nodes: keys_changed_at is below the account's 5"))
    assert (answer.type.slug, answer.extra) == ("invalid-keys-changed-at", {"code": "invalid-keysChangedAt"})


def test_a_refused_move_tokenserver_has_no_code_for_is_refused_with_ours():
    answer = problem(as_node_problem, InvalidUpdate("nodes: an assignment does not move between nodes"))
    assert (answer.type.slug, answer.extra) == ("refused", {"code": "invalid-update"})


def test_node_refusals_name_no_account():
    answer = problem(as_node_problem, Retired("nodes: account 7's assignments were retired", account_id=7))
    assert (answer.type.slug, answer.status, answer.extra) == ("assignment-retired", 410, {})


def test_an_unknown_name_is_the_generic_refused_unless_the_view_knows_more():
    """The PUT says account-gone for it (the account was found before): that is the view's knowledge."""
    answer = problem(as_node_problem, UnknownName("nodes: unknown node 'x' for service 'sync-1.5'"))
    assert answer.type.slug == "refused"


def test_a_limit_over_is_rate_limited_with_when_to_try_again():
    limit = platform_events.limits.counters.Limit(name="api-test", max_hits=1, window=datetime.timedelta(minutes=1))
    answer = problem(as_problem, platform_events.limits.counters.LimitExceeded(limit=limit, retry_after=42))
    assert (answer.type.slug, answer.status, answer.headers) == ("rate-limited", 429, {"Retry-After": "42"})
