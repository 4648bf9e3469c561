"""django-axes' failed sign-ins in the back-office, with the way to unlock a staff login.

axes registers its own admin for them (on this site, so with declared lookups only); this one
replaces it for ``AccessAttempt`` to add "Unlock the selected logins", and takes away the plain
delete, which would lift a lock-out too but leave no record of who did it.
"""

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin

from platform_events.admin_kit.actions import Reason, RowAction, RowActions
from platform_events.lockouts.services import staff_login_unlock

admin.site.unregister(AccessAttempt)

LOCKOUT_ACTIONS = {
    # Run per login (a login has a record per address and browser), from every address at once.
    "unlock": RowAction(
        "Yes, unlock",
        run=lambda login, actor, reason: bool(staff_login_unlock(username=login, actor=actor)),
        question=("Unlock %(count)d login:", "Unlock %(count)d logins:"),
        done=("%(count)d login unlocked: %(names)s.", "%(count)d logins unlocked: %(names)s."),
        none_done="Nothing to unlock: those records were already gone.",
        reason=Reason.NONE,
        on_page=False,
    ),
}


@admin.register(AccessAttempt)
class LockoutAdmin(RowActions, AccessAttemptAdmin):
    # Not axes' "cleanup_expired_attempts": it needs request state only axes' own views set (a 500 here).
    row_actions = LOCKOUT_ACTIONS
    actions = list(LOCKOUT_ACTIONS)
    # Lists the records (login, address, failures) the unlock clears.
    confirmation_template = "admin/axes/accessattempt/unlock_confirmation.html"

    @admin.action(permissions=["unlock"], description="Unlock the selected logins")
    def unlock(self, request, queryset):
        """A confirmation page naming the logins; once confirmed, each login unlocked from every address
        (the admin's history records who did it: platform_events/lockouts/services.py)."""
        logins = sorted({attempt.username for attempt in queryset if attempt.username})
        return self.confirm_and_run(request, queryset.order_by("username", "ip_address"), "unlock", rows=logins)

    def changelist_view(self, request, extra_context=None):
        title = "Failed sign-ins: select a login to unlock it"
        return super().changelist_view(request, {"title": title, **(extra_context or {})})

    def has_unlock_permission(self, request):
        # Unlocking deletes axes' records: whoever may delete them may unlock (superusers; no role may).
        return request.user.has_perm("axes.delete_accessattempt")

    def has_delete_permission(self, request, obj=None):
        # A plain delete lifts the lock-out too, without the record that Unlock keeps.
        return False
