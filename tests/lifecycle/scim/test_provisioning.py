"""What an identity provider sends, made an account's state (lifecycle/scim/provisioning.py): the
mapping of docs/scim.md, each refusal leaving everything as it was."""

import pytest
from django.contrib.auth.hashers import check_password
from scim2_models import Email, PatchOp, User

from accounts.models import Account, AccountPassword, AccountStatus, ScimUser
from lifecycle.demo.factories import AccountFactory
from lifecycle.scim.errors import ScimError
from lifecycle.scim.provisioning import (
    DEACTIVATED,
    DELETED,
    REACTIVATED,
    RESTORED,
    VOUCHED,
    scim_user_change,
    scim_user_create,
    scim_user_delete,
    wanted_of,
)
from lifecycle.scim.users import user_of, version_of
from platform_events.api.clients import api_client_create
from platform_events.audit.models import AuditEvent
from tokens.models import Token, TokenAction

pytestmark = pytest.mark.django_db

PASSWORD = "Correct-Horse-9-battery"


@pytest.fixture
def okta(db):
    return api_client_create(name="okta", scopes=["scim"], actor=None)[0]


def new_user(user_name="ann@example.com", email="ann@example.com", **fields) -> User:
    emails = [Email(value=email, type="work", primary=True)] if email else None
    return User(user_name=user_name, emails=emails, **fields)


def reasons(account, action) -> list:
    return list(
        AuditEvent.objects.filter(resource_type="account", resource_id=str(account.pk), action=action).values_list(
            "reason", flat=True
        )
    )


def replace(client, account, **fields):
    """A PUT: the User as shown, with ``fields`` changed."""

    def change(shown: User) -> User:
        return shown.model_copy(update=fields)

    return scim_user_change(client=client, account_id=account.pk, change=change, if_match=None)


# The address a User asks for


@pytest.mark.parametrize(
    ("emails", "user_name", "expected"),
    [
        ([Email(value="a@x.example", primary=True), Email(value="b@x.example")], "ann", "a@x.example"),
        ([Email(value="b@x.example"), Email(value="a@x.example", primary=True)], "ann", "a@x.example"),
        ([Email(value="only@x.example", type="home")], "ann", "only@x.example"),
        (None, "ann@x.example", "ann@x.example"),
    ],
)
def test_the_address_is_the_primary_e_mail_or_the_only_one_or_the_user_name(emails, user_name, expected):
    assert wanted_of(User(user_name=user_name, emails=emails)).email == expected


@pytest.mark.parametrize(
    "emails", [None, [Email(value="a@x.example"), Email(value="b@x.example")]], ids=["none", "two-none-primary"]
)
def test_a_user_naming_no_address_is_invalid_value(emails):
    with pytest.raises(ScimError, match="needs its address") as refusal:
        wanted_of(User(user_name="ann", emails=emails))
    assert (refusal.value.status, refusal.value.scim_type) == (400, "invalidValue")


# Creating


def test_a_user_created_active_is_activated_without_an_e_mail_as_the_client(okta):
    account = scim_user_create(client=okta, user=new_user(active=True, external_id="00u-1"))
    assert (account.status, account.email, account.login) == (AccountStatus.ACTIVE, "ann@example.com", "ann")
    link = ScimUser.objects.get(account=account)
    assert (link.client, link.user_name, link.external_id) == (okta, "ann@example.com", "00u-1")
    token = Token.objects.get(account=account, action=TokenAction.ACTIVATION, consumed_at__isnull=False)
    assert (token.consumed_with, token.mail_state) == ("identity_provider", "skipped")
    assert reasons(account, "account.activated") == [VOUCHED]
    assert (
        AuditEvent.objects.get(resource_id=str(account.pk), action="account.created").actor_id
        == f"api-client:{okta.pk}"
    )
    assert not AccountPassword.objects.filter(account=account).exists()  # its people sign in through the provider


def test_a_user_created_without_active_gets_the_activation_e_mail_as_any_account(okta):
    account = scim_user_create(client=okta, user=new_user())
    assert account.status == AccountStatus.PROVISIONED
    token = Token.objects.get(account=account, action=TokenAction.ACTIVATION)
    assert (token.consumed_at, token.mail_state) == (None, "queued")


def test_a_user_created_inactive_is_suspended_with_the_reason(okta):
    account = scim_user_create(client=okta, user=new_user(active=False))
    assert account.status == AccountStatus.SUSPENDED and account.activated_at is None
    assert reasons(account, "account.suspended") == [DEACTIVATED]


def test_a_password_sent_is_the_accounts_and_checked_like_any_other(okta):
    account = scim_user_create(client=okta, user=new_user(active=True, password=PASSWORD))
    assert check_password(PASSWORD, AccountPassword.objects.get(account=account).password)
    with pytest.raises(ScimError, match="password: This password is too short") as refusal:
        scim_user_create(client=okta, user=new_user("bo@example.com", "bo@example.com", password="abc"))
    assert refusal.value.scim_type == "invalidValue"
    assert not Account.objects.filter(email="bo@example.com").exists()


@pytest.mark.parametrize(
    ("user_name", "login"),
    [
        ("ann", "ann"),
        ("Ann.Lee", "Ann.Lee"),
        ("ann@example.com", "ann"),
        ("Ann Lee", "Ann-Lee"),
        ("Zoë@example.com", "Zo"),
        ("_@example.com", "user"),
    ],
)
def test_the_login_is_the_user_name_when_it_is_a_valid_login_or_derived_from_it(okta, user_name, login):
    account = scim_user_create(client=okta, user=new_user(user_name, "someone@example.com"))
    assert account.login == login


def test_a_derived_login_taken_is_numbered(okta):
    AccountFactory(login="ann")
    AccountFactory(login="ANN-2")
    account = scim_user_create(client=okta, user=new_user())
    assert account.login == "ann-3"


@pytest.mark.parametrize(
    ("existing", "user", "match"),
    [
        ({"login": "ann"}, new_user("ann", "new@example.com"), "another account's login"),
        ({"email": "ann@example.com", "active": True}, new_user(active=True), "already claimed"),
    ],
)
def test_a_taken_login_or_claimed_address_is_uniqueness_and_nothing_is_made(okta, existing, user, match):
    AccountFactory(**existing)
    before = Account.objects.count()
    with pytest.raises(ScimError, match=match) as refusal:
        scim_user_create(client=okta, user=user)
    assert (refusal.value.status, refusal.value.scim_type) == (409, "uniqueness")
    assert (Account.objects.count(), ScimUser.objects.count()) == (before, 0)


def test_a_user_name_another_user_has_is_uniqueness_ignoring_case(okta):
    scim_user_create(client=okta, user=new_user())
    with pytest.raises(ScimError, match="already taken") as refusal:
        scim_user_create(client=okta, user=new_user("ANN@example.com", "other@example.com"))
    assert refusal.value.scim_type == "uniqueness"
    assert Account.objects.count() == 1


def test_an_address_the_rules_refuse_is_invalid_value_with_their_sentence(okta):
    with pytest.raises(ScimError, match="E-mail must be plain ASCII|not a valid address") as refusal:
        scim_user_create(client=okta, user=new_user("ann", "zoë@example.com"))
    assert refusal.value.scim_type == "invalidValue"
    assert not Account.objects.exists()


def test_a_user_deleted_and_created_again_is_the_same_account_restored(okta):
    first = scim_user_create(client=okta, user=new_user(active=True))
    scim_user_delete(client=okta, account=first)
    assert ScimUser.objects.get(account=first).deleted_at is not None
    again = scim_user_create(client=okta, user=new_user("Ann@example.com", "ann@example.com", active=True))
    assert again.pk == first.pk and again.status == AccountStatus.ACTIVE
    assert reasons(again, "account.reprovisioned") == [RESTORED]
    assert ScimUser.objects.get(account=again).user_name == "Ann@example.com"
    assert ScimUser.objects.get(account=again).deleted_at is None


def test_a_user_staff_deprovisioned_is_not_restored_by_the_client(okta):
    from django.contrib.auth import get_user_model

    from accounts.services import account_deprovision

    first = scim_user_create(client=okta, user=new_user(active=True))
    account_deprovision(account=first, actor=get_user_model().objects.create_user("privacy1", is_staff=True))
    with pytest.raises(ScimError, match="only staff restore it") as refusal:
        scim_user_create(client=okta, user=new_user(active=True))
    assert refusal.value.scim_type == "uniqueness"
    first.refresh_from_db()
    assert first.status == AccountStatus.DEPROVISIONED


def test_a_deletion_is_the_account_deprovisioned_as_the_client_with_the_reason(okta):
    account = scim_user_create(client=okta, user=new_user(active=True))
    scim_user_delete(client=okta, account=account)
    scim_user_delete(client=okta, account=account)  # again: gone all the same
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED
    assert reasons(account, "account.deprovisioned") == [DELETED]


def test_a_user_staff_suspended_then_the_client_deleted_is_not_restored_by_it(okta):
    """Reprovisioning would lift the suspension with it."""
    from django.contrib.auth import get_user_model

    from accounts.services import account_suspend

    first = scim_user_create(client=okta, user=new_user(active=True))
    account_suspend(account=first, actor=get_user_model().objects.create_user("support1", is_staff=True))
    scim_user_delete(client=okta, account=first)
    with pytest.raises(ScimError, match="staff suspended its account"):
        scim_user_create(client=okta, user=new_user(active=True))
    first.refresh_from_db()
    assert first.status == AccountStatus.DEPROVISIONED


def test_another_clients_deleted_user_name_is_still_taken(okta):
    entra = api_client_create(name="entra", scopes=["scim"], actor=None)[0]
    first = scim_user_create(client=okta, user=new_user(active=True))
    scim_user_delete(client=okta, account=first)
    with pytest.raises(ScimError, match="already taken"):
        scim_user_create(client=entra, user=new_user("ann@example.com", "ann2@example.com"))
    first.refresh_from_db()
    assert first.status == AccountStatus.DEPROVISIONED


# Changing


@pytest.fixture
def ann(okta):
    return scim_user_create(client=okta, user=new_user(active=True, external_id="00u-1"))


def test_active_false_suspends_and_active_true_lifts_it_with_the_reasons(okta, ann):
    assert replace(okta, ann, active=False).status == AccountStatus.SUSPENDED
    assert replace(okta, ann, active=True).status == AccountStatus.ACTIVE
    assert reasons(ann, "account.suspended") == [DEACTIVATED]
    assert reasons(ann, "account.unsuspended") == [REACTIVATED]


def test_a_suspension_staff_made_is_not_lifted_by_the_client(okta, ann):
    from django.contrib.auth import get_user_model

    from accounts.services import account_suspend

    account_suspend(account=ann, actor=get_user_model().objects.create_user("support1", is_staff=True))
    with pytest.raises(ScimError, match="only staff lift that suspension") as refusal:
        replace(okta, ann, active=True, external_id="00u-2")
    assert (refusal.value.status, refusal.value.scim_type) == (400, "mutability")
    ann.refresh_from_db()
    assert ann.status == AccountStatus.SUSPENDED
    assert ScimUser.objects.get(account=ann).external_id == "00u-1"
    assert replace(okta, ann, active=False).status == AccountStatus.SUSPENDED  # already so: nothing to do


def test_another_clients_suspension_is_not_lifted_either(okta):
    from accounts.services import account_suspend

    account = scim_user_create(client=okta, user=new_user(active=True))
    entra = api_client_create(name="entra", scopes=["scim"], actor=None)[0]
    account_suspend(account=account, actor=entra)
    with pytest.raises(ScimError, match="only staff"):
        replace(okta, account, active=True)


def test_active_true_on_a_user_never_activated_activates_it_vouched_for(okta):
    account = scim_user_create(client=okta, user=new_user(active=False))
    account = replace(okta, account, active=True)
    assert account.status == AccountStatus.ACTIVE and account.activated_at is not None
    assert reasons(account, "account.activated") == [VOUCHED]


def test_active_left_out_changes_nothing(okta, ann):
    assert replace(okta, ann, active=None).status == AccountStatus.ACTIVE


def test_a_new_user_name_that_is_a_login_becomes_the_login_too(okta, ann):
    account = replace(okta, ann, user_name="ann.lee")
    assert (account.login, ScimUser.objects.get(account=ann).user_name) == ("ann.lee", "ann.lee")
    account = replace(okta, ann, user_name="ann.lee@example.com")
    assert (account.login, ScimUser.objects.get(account=ann).user_name) == ("ann.lee", "ann.lee@example.com")


def test_a_new_address_is_the_accounts_at_once_and_the_links_to_the_old_one_stop(okta, ann):
    from tokens.services import token_send_password_recovery

    recovery = token_send_password_recovery(account=ann, actor=None)
    account = replace(okta, ann, emails=[Email(value="ann.new@example.com", primary=True)])
    assert account.email == "ann.new@example.com"
    recovery.refresh_from_db()
    assert recovery.superseded_at is not None
    assert AuditEvent.objects.filter(resource_id=str(ann.pk), action="account.changed").exists()


def test_a_new_address_another_account_claimed_is_uniqueness_and_nothing_changes(okta, ann):
    AccountFactory(active=True, email="taken@example.com")
    with pytest.raises(ScimError, match="already claimed") as refusal:
        replace(okta, ann, user_name="ann2", emails=[Email(value="taken@example.com", primary=True)], active=False)
    assert refusal.value.scim_type == "uniqueness"
    ann.refresh_from_db()
    assert (ann.email, ann.login, ann.status) == ("ann@example.com", "ann", AccountStatus.ACTIVE)
    assert ScimUser.objects.get(account=ann).user_name == "ann@example.com"


def test_the_external_id_is_kept_and_cleared(okta, ann):
    replace(okta, ann, external_id="00u-2")
    assert ScimUser.objects.get(account=ann).external_id == "00u-2"
    replace(okta, ann, external_id=None)
    assert ScimUser.objects.get(account=ann).external_id is None


def test_a_password_changes_and_is_left_alone_when_not_sent(okta, ann):
    replace(okta, ann, password=PASSWORD)
    stored = AccountPassword.objects.get(account=ann).password
    replace(okta, ann, password=None, external_id="x")
    assert AccountPassword.objects.get(account=ann).password == stored


def test_if_match_must_name_the_current_version(okta, ann):
    shown = user_of(Account.objects.select_related("scim_user").get(pk=ann.pk), location="")
    stale = version_of(shown)
    replace(okta, ann, external_id="00u-2")
    with pytest.raises(ScimError, match="changed since") as refusal:
        scim_user_change(client=okta, account_id=ann.pk, change=lambda user: user, if_match=stale)
    assert refusal.value.status == 412
    current = version_of(user_of(Account.objects.select_related("scim_user").get(pk=ann.pk), location=""))
    for if_match in (current, f"{stale}, {current}", "*"):
        scim_user_change(client=okta, account_id=ann.pk, change=lambda user: user, if_match=if_match)


def test_a_patch_applies_to_the_user_as_shown(okta, ann):
    patch = PatchOp[User].model_validate(
        {"Operations": [{"op": "Replace", "path": 'emails[type eq "work"].value', "value": "ann.w@example.com"}]}
    )
    account = scim_user_change(
        client=okta, account_id=ann.pk, change=lambda user: patch.patch(user) and user, if_match=None
    )
    assert account.email == "ann.w@example.com"


def test_another_clients_user_is_not_found_and_unchanged(okta, ann):
    entra = api_client_create(name="entra", scopes=["scim"], actor=None)[0]
    with pytest.raises(ScimError, match="There is no User") as refusal:
        replace(entra, ann, active=False)
    assert refusal.value.status == 404
    ann.refresh_from_db()
    assert ann.status == AccountStatus.ACTIVE
