"""Deprovisioning and reprovisioning as the database keeps them (accounts/sql/0021_deprovision.sql,
tokens/sql/0019_deprovisioned.sql), tried in raw SQL as the runtime role, as psql would."""

import threading

import psycopg
import pytest

from tests.support import connect, deprovisioning_waits_for
from tokens.models import Token
from tokens.selectors import due_mail

pytestmark = pytest.mark.django_db

TOMBSTONE = 2**63 - 1


def new_account(sql, status="provisioned", email="jane@example.com", login="jane"):
    """An account in ``status``: activated by its token for active, then suspended for suspended."""
    (account_id,) = sql("INSERT INTO accounts (email, login) VALUES (%s, %s) RETURNING id", [email, login])[0]
    if status in ("active", "suspended"):
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id])
    if status == "suspended":
        sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
    return account_id


def account(sql, account_id) -> dict:
    names = ["status", "status_changed_at", "activated_at", "suspended_at", "deprovisioned_at", "reprovisioned_at"]
    (row,) = sql(f"SELECT status::text, {', '.join(names[1:])} FROM accounts WHERE id = %s", [account_id])
    return dict(zip(names, row, strict=True))


def live_tokens(sql, account_id) -> list[tuple]:
    return sql(
        "SELECT action::text, mail_state::text FROM tokens"
        " WHERE account = %s AND consumed_at IS NULL AND superseded_at IS NULL ORDER BY id",
        [account_id],
    )


def deprovision(sql, account_id, reason="the person asked"):
    sql("SELECT set_config('lifecycle.reason', %s, true)", [reason])
    sql("UPDATE accounts SET status = 'deprovisioned' WHERE id = %s", [account_id])


@pytest.mark.parametrize("start", ["provisioned", "active", "suspended"])
def test_every_state_can_be_deprovisioned_and_the_trail_and_outbox_say_so(sql, start):
    account_id = new_account(sql, start)
    deprovision(sql, account_id)
    row = account(sql, account_id)
    assert row["status"] == "deprovisioned"
    assert row["deprovisioned_at"] is not None and row["deprovisioned_at"] == row["status_changed_at"]
    (audit,) = sql(
        "SELECT reason, diff_before->>'status', diff_after->>'status' FROM audit_events"
        " WHERE action = 'account.deprovisioned' AND resource_id = %s",
        [str(account_id)],
    )
    assert audit == ("the person asked", start, "deprovisioned")
    (event,) = sql(
        "SELECT payload->'data'->>'status' FROM outbox_events"
        " WHERE event_type = 'account.deprovisioned' AND aggregate_id = %s",
        [str(account_id)],
    )
    assert event == ("deprovisioned",)


@pytest.mark.parametrize("target", ["active", "suspended"])
def test_a_deprovisioned_account_goes_nowhere_but_back_to_provisioned(sql, refused, target):
    account_id = new_account(sql, "active")
    deprovision(sql, account_id)
    before = account(sql, account_id)
    refused(
        "UPDATE accounts SET status = %s WHERE id = %s",
        [target, account_id],
        match="is deprovisioned; only reprovisioning",
    )
    assert account(sql, account_id) == before


def test_provisioned_is_still_refused_from_any_other_state(sql, refused):
    account_id = new_account(sql, "active")
    refused(
        "UPDATE accounts SET status = 'provisioned' WHERE id = %s",
        [account_id],
        match="cannot be set back to provisioned",
    )


def test_reprovisioning_gives_a_fresh_activation_token_and_keeps_the_address_claimed(sql, refused):
    account_id = new_account(sql, "suspended")
    deprovision(sql, account_id)
    sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [account_id])
    row = account(sql, account_id)
    assert row["status"] == "provisioned"
    assert row["reprovisioned_at"] == row["status_changed_at"]
    assert row["deprovisioned_at"] is None and row["suspended_at"] is None
    assert row["activated_at"] is not None  # it had activated: the address stays its own
    assert live_tokens(sql, account_id) == [("activation", "queued")]
    assert sql(
        "SELECT count(*) FROM audit_events WHERE action = 'account.reprovisioned' AND resource_id = %s",
        [str(account_id)],
    ) == [(1,)]
    assert sql(
        "SELECT count(*) FROM outbox_events WHERE event_type = 'account.reprovisioned' AND aggregate_id = %s",
        [str(account_id)],
    ) == [(1,)]
    # Another sign-up with the address cannot activate meanwhile, as while it was deprovisioned.
    other = new_account(sql, email="JANE@example.com", login="jane2")
    refused("UPDATE tokens SET consumed_at = now() WHERE account = %s", [other], match="already claimed")
    # The fresh token activates it again.
    sql(
        "UPDATE tokens SET consumed_at = now() WHERE account = %s AND superseded_at IS NULL AND consumed_at IS NULL",
        [account_id],
    )
    assert account(sql, account_id)["status"] == "active"


def test_the_address_of_a_deprovisioned_account_stays_claimed(sql, refused):
    account_id = new_account(sql, "active")
    deprovision(sql, account_id)
    other = new_account(sql, email="jane@example.com", login="jane2")
    refused("UPDATE tokens SET consumed_at = now() WHERE account = %s", [other], match="already claimed")


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO accounts (email, login, status) VALUES ('x@example.com', 'x1', 'deprovisioned')",
        "INSERT INTO accounts (email, login, deprovisioned_at) VALUES ('x@example.com', 'x1', now())",
        "INSERT INTO accounts (email, login, reprovisioned_at) VALUES ('x@example.com', 'x1', now())",
    ],
)
def test_a_new_account_is_never_born_deprovisioned(sql, refused, statement):
    refused(statement, match="new account cannot be deprovisioned|cannot be given")
    assert sql("SELECT count(*) FROM accounts WHERE login = 'x1'") == [(0,)]


@pytest.mark.parametrize("column", ["deprovisioned_at", "reprovisioned_at"])
def test_the_new_timestamps_are_history(sql, refused, column):
    account_id = new_account(sql, "active")
    deprovision(sql, account_id)
    sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [account_id])
    before = account(sql, account_id)
    refused(
        f"UPDATE accounts SET {column} = now() - interval '1 year' WHERE id = %s",
        [account_id],
        match="cannot be set by hand",
    )
    assert account(sql, account_id) == before


def test_deprovisioning_replaces_every_live_token_and_its_queued_mail_is_skipped(sql):
    account_id = new_account(sql, "active")
    sql("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery')", [account_id])
    assert live_tokens(sql, account_id) == [("password_recovery", "queued")]
    deprovision(sql, account_id)
    assert live_tokens(sql, account_id) == []
    assert sql(
        "SELECT mail_state::text, mail_error FROM tokens WHERE account = %s AND action = 'password_recovery'",
        [account_id],
    ) == [("skipped", "its account was deprovisioned before it was mailed")]


@pytest.mark.parametrize("action", ["activation", "password_recovery"])
def test_no_token_is_issued_for_a_deprovisioned_account(sql, refused, action):
    account_id = new_account(sql, "active")
    deprovision(sql, account_id)
    refused(
        "INSERT INTO tokens (account, action) VALUES (%s, %s)", [account_id, action], match="is deprovisioned; no token"
    )
    assert live_tokens(sql, account_id) == []


def test_no_token_of_a_deprovisioned_account_is_used(sql, refused):
    """Even one replaced by deprovisioning is refused for its account first: nothing about the token is said."""
    account_id = new_account(sql)
    deprovision(sql, account_id)
    refused(
        "UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id], match="account .* is deprovisioned"
    )
    assert account(sql, account_id)["status"] == "deprovisioned"


def test_deprovisioning_retires_the_node_assignments(sql):
    account_id = new_account(sql, "active")
    (service,) = sql("INSERT INTO services (service, pattern) VALUES ('sync-1.5', '{node}/1.5/{uid}') RETURNING id")[0]
    (node,) = sql(
        "INSERT INTO nodes (service, node, capacity, available) VALUES (%s, 'https://phx12', 10, 10) RETURNING id",
        [service],
    )[0]
    sql("SELECT node_routine_allocate(%s, %s, 0, '', NULL, 0.1)", [service, account_id])
    deprovision(sql, account_id)
    assert sql("SELECT generation, replaced_at IS NOT NULL FROM node_assignments WHERE account = %s", [account_id]) == [
        (TOMBSTONE, True)
    ]
    assert sql("SELECT current_load FROM nodes WHERE id = %s", [node]) == [(0,)]


@pytest.mark.django_db(transaction=True)
def test_a_token_issued_while_deprovisioning_is_replaced_too():
    """The token's insert holds the account FOR SHARE until it commits; the deprovisioning waits for
    it, then replaces the new token as well: no live token of a deprovisioned account."""
    with connect(autocommit=True) as setup:
        (account_id,) = setup.execute(
            "INSERT INTO accounts (email, login) VALUES ('jane@example.com', 'jane') RETURNING id"
        ).fetchone()
        setup.execute("UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id])
    with connect() as issuing:
        issuing.execute("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery')", [account_id])
        deprovisioning_waits_for(issuing, account_id)
    with connect(autocommit=True) as check:
        live = check.execute(
            "SELECT count(*) FROM tokens WHERE account = %s AND consumed_at IS NULL AND superseded_at IS NULL",
            [account_id],
        ).fetchone()
        assert live == (0,)


@pytest.mark.django_db(transaction=True)
def test_a_token_issued_after_deprovisioning_committed_is_refused():
    with connect(autocommit=True) as setup:
        (account_id,) = setup.execute(
            "INSERT INTO accounts (email, login) VALUES ('jane@example.com', 'jane') RETURNING id"
        ).fetchone()
    with connect() as deprovisioning, connect() as issuing:
        deprovisioning.execute("UPDATE accounts SET status = 'deprovisioned' WHERE id = %s", [account_id])
        failure = []

        def run():
            try:
                issuing.execute("INSERT INTO tokens (account, action) VALUES (%s, 'activation')", [account_id])
            except psycopg.Error as error:
                failure.append(error)

        thread = threading.Thread(target=run)
        thread.start()
        thread.join(timeout=1.0)
        assert thread.is_alive(), "the insert did not wait for the deprovisioning under way"
        deprovisioning.commit()
        thread.join(timeout=30)
        assert failure and failure[0].sqlstate == "LT009"


class TestRestoreTokens:
    """A restore token: issued for a deprovisioned account only, and consuming it reprovisions the account."""

    def test_consuming_a_restore_token_reprovisions_the_account(self, sql):
        account_id = new_account(sql, "active")
        deprovision(sql, account_id)
        sql("INSERT INTO tokens (account, action) VALUES (%s, 'restore')", [account_id])
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'restore'", [account_id])
        assert account(sql, account_id)["status"] == "provisioned"
        assert live_tokens(sql, account_id) == [("activation", "queued")]
        assert sql(
            "SELECT count(*) FROM audit_events WHERE action = 'account.reprovisioned' AND resource_id = %s",
            [str(account_id)],
        ) == [(1,)]

    @pytest.mark.parametrize("state", ["provisioned", "active", "suspended"])
    def test_no_restore_token_for_an_account_that_is_not_deprovisioned(self, sql, refused, state):
        account_id = new_account(sql, state)
        refused(
            "INSERT INTO tokens (account, action) VALUES (%s, 'restore')",
            [account_id],
            match="not deprovisioned; a restore token",
        )

    @pytest.mark.attack
    def test_no_restore_token_for_a_deprovisioned_account_that_never_activated(self, sql, refused):
        """It holds no address to restore (docs/rules.md, "Deprovisioning"): refused in raw SQL too."""
        account_id = new_account(sql, "provisioned")
        deprovision(sql, account_id)
        refused(
            "INSERT INTO tokens (account, action) VALUES (%s, 'restore')",
            [account_id],
            match="never activated",
        )

    @pytest.mark.attack
    def test_no_restore_token_for_an_account_deprovisioned_while_suspended(self, sql, refused):
        """The person's way round a suspension: closed by staff while suspended, restored by signing up."""
        account_id = new_account(sql, "suspended")
        deprovision(sql, account_id)
        refused(
            "INSERT INTO tokens (account, action) VALUES (%s, 'restore')",
            [account_id],
            match="was suspended when it was deprovisioned",
        )

    def test_a_restore_token_outlived_by_a_reprovisioning_is_replaced(self, sql, refused):
        """Reprovisioned by staff meanwhile: the restore link is replaced, not used a second time."""
        account_id = new_account(sql, "active")
        deprovision(sql, account_id)
        sql("INSERT INTO tokens (account, action) VALUES (%s, 'restore')", [account_id])
        sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [account_id])
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'restore'",
            [account_id],
            match="replaced by a newer one",
        )

    def test_a_restore_token_cannot_be_used_once_the_account_is_back(self, sql, refused):
        account_id = new_account(sql, "active")
        deprovision(sql, account_id)
        sql("INSERT INTO tokens (account, action) VALUES (%s, 'restore')", [account_id])
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'restore'", [account_id])
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'activation' AND consumed_at IS NULL"
            " AND superseded_at IS NULL", [account_id])  # fmt: skip
        assert account(sql, account_id)["status"] == "active"
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'restore'",
            [account_id],
            match="already been used",
        )


@pytest.mark.attack
def test_a_token_inserted_from_a_trigger_of_ones_own_is_still_refused(sql, refused):
    """The runtime role's own trigger (on a temporary table, its function in pg_temp) inserts a token:
    the insert runs at trigger depth 1, which is no licence to issue a token for a deprovisioned
    account."""
    account_id = new_account(sql, "active")
    deprovision(sql, account_id)
    sql("CREATE TEMP TABLE launder (account bigint)")
    sql(
        "CREATE FUNCTION pg_temp.launder_insert() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN INSERT INTO public.tokens (account, action) VALUES (NEW.account, 'password_recovery');"
        " RETURN NEW; END $$"
    )
    sql("CREATE TRIGGER launder AFTER INSERT ON pg_temp.launder FOR EACH ROW EXECUTE FUNCTION pg_temp.launder_insert()")
    refused("INSERT INTO pg_temp.launder VALUES (%s)", [account_id], match=f"account {account_id} is deprovisioned")
    assert live_tokens(sql, account_id) == []


@pytest.mark.attack
def test_a_restore_token_inserted_from_a_trigger_of_ones_own_is_refused_for_a_live_account(sql, refused):
    account_id = new_account(sql, "active")
    sql("CREATE TEMP TABLE launder (account bigint)")
    sql(
        "CREATE FUNCTION pg_temp.launder_insert() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN INSERT INTO public.tokens (account, action) VALUES (NEW.account, 'restore');"
        " RETURN NEW; END $$"
    )
    sql("CREATE TRIGGER launder AFTER INSERT ON pg_temp.launder FOR EACH ROW EXECUTE FUNCTION pg_temp.launder_insert()")
    refused("INSERT INTO pg_temp.launder VALUES (%s)", [account_id], match=f"account {account_id} is not deprovisioned")
    assert sql("SELECT count(*) FROM tokens WHERE account = %s AND action = 'restore'", [account_id]) == [(0,)]


@pytest.mark.attack
def test_the_deprovisioning_retirement_cannot_be_called_on_a_live_account(sql):
    """node_routine_retire_deprovisioned() is the deprovisioning's (SECURITY DEFINER, callable by whoever
    may deprovision): called by hand on a live account it would tombstone its rows with a
    retired_generation, which only a deprovisioning may write (the later reset gives it back)."""
    account_id = new_account(sql, "active")
    (service,) = sql("INSERT INTO services (service, pattern) VALUES ('sync-1.5', '{node}/1.5/{uid}') RETURNING id")[0]
    sql("INSERT INTO nodes (service, node, capacity, available) VALUES (%s, 'https://phx12', 10, 10)", [service])
    sql("SELECT node_routine_allocate(%s, %s, 0, '', NULL, 0.1)", [service, account_id])
    assert sql("SELECT node_routine_retire_deprovisioned(%s)", [account_id]) == [(0,)]
    assert sql(
        "SELECT generation < %s, replaced_at IS NULL, retired_generation FROM node_assignments WHERE account = %s",
        [TOMBSTONE, account_id],
    ) == [(True, True, None)]


@pytest.mark.attack
@pytest.mark.django_db(transaction=True)
def test_a_token_locked_by_hand_through_a_deprovisioning_is_still_useless():
    """Holding the recovery token's row lock (as the mailroom's claim does) makes the deprovisioning skip
    it, so it stays live: the holder then can neither use it nor see it due for mail."""
    with connect(autocommit=True) as setup:
        (account_id,) = setup.execute(
            "INSERT INTO accounts (email, login) VALUES ('jane@example.com', 'jane') RETURNING id"
        ).fetchone()
        setup.execute("UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id])
        (token_id,) = setup.execute(
            "INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery') RETURNING id", [account_id]
        ).fetchone()
    with connect() as holder, connect(autocommit=True) as deprovisioning:
        holder.execute("SELECT id FROM tokens WHERE id = %s FOR UPDATE", [token_id])
        deprovisioning.execute("UPDATE accounts SET status = 'deprovisioned' WHERE id = %s", [account_id])
        with pytest.raises(psycopg.Error) as refused:
            holder.execute("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token_id])
        assert refused.value.sqlstate == "LT009"
        holder.rollback()
    live = Token.objects.filter(pk=token_id, consumed_at=None, superseded_at=None)
    assert live.exists()  # skipped, not waited for
    assert not due_mail().filter(pk=token_id).exists()
