"""The admin's pages are registered where they are read: the URLconf and the system checks import every
app's admin module (LifecycleAdminConfig), each in a process that has read none before."""

from tests.support import database_url_for_tests, manage

# Every model with an admin page, as the site's index lists them.
REGISTERED = [
    "accounts.Account",
    "accounts.Node",
    "accounts.NodeAssignment",
    "accounts.Service",
    "auth.Group",
    "auth.User",
    "axes.AccessAttempt",
    "axes.AccessFailureLog",
    "axes.AccessLog",
    "django_q.Failure",
    "django_q.OrmQ",
    "django_q.Schedule",
    "django_q.Success",
    "platform_events.ApiClient",
    "platform_events.AuditEvent",
    "platform_events.OutboxEvent",
    "platform_events.WebhookDelivery",
    "platform_events.WebhookSubscription",
    "tokens.Job",
    "tokens.Token",
]
PRINT_REGISTERED = (
    "from django.contrib import admin; print(*sorted(model._meta.label for model in admin.site._registry), sep=chr(10))"
)


def registered_after(statement: str) -> list[str]:
    done = manage(
        "shell", "--no-imports", "-c", f"{statement}; {PRINT_REGISTERED}", DATABASE_URL=database_url_for_tests()
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_sites_urlconf_registers_every_admin_page():
    """Loading the URLconf, as the first request does, registers every model's page on the site."""
    assert registered_after("import lifecycle.urls") == REGISTERED


def test_the_system_checks_check_every_admin_page():
    """The admin's checks run over every registered page, also before any URLconf is loaded."""
    assert registered_after("from django.core import checks; checks.run_checks(tags=['admin'])") == REGISTERED


PRINT_ADMIN_MODULES = (
    "import sys; from django.apps import apps;"
    " print(*[app.name for app in apps.get_app_configs() if f'{app.name}.admin' in sys.modules], sep=chr(10))"
)


def test_a_process_that_loads_no_urlconf_and_skips_the_checks_imports_no_admin_module():
    """Django set up without the URLconf or the checks (as drain_mailroom runs) imports no app's admin
    module: the start-up LifecycleAdminConfig saves."""
    done = manage("shell", "--no-imports", "-c", PRINT_ADMIN_MODULES, DATABASE_URL=database_url_for_tests())

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
