"""django-axes' failed sign-ins in the back-office, with the way to unlock a staff login.

axes registers its own admin for them (on this site, so with declared lookups only); this one
replaces it for ``AccessAttempt`` to add "Unlock the selected logins", and takes away the plain
delete, which would lift a lock-out too but leave no record of who did it.
"""

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.utils.translation import ngettext

from platform_events.lockouts.services import staff_login_unlock

admin.site.unregister(AccessAttempt)


@admin.register(AccessAttempt)
class LockoutAdmin(AccessAttemptAdmin):
    # Not axes' "cleanup_expired_attempts": it needs request state only axes' own views set (a 500 here).
    actions = ["unlock"]

    @admin.action(permissions=["unlock"], description="Unlock the selected logins")
    def unlock(self, request, queryset):
        """A confirmation page naming the logins; once confirmed, each login unlocked from every address."""
        _, _, description = self.get_action("unlock")
        logins = sorted({attempt.username for attempt in queryset if attempt.username})
        if request.POST.get("confirm") != "yes":
            return TemplateResponse(
                request,
                "admin/axes/accessattempt/unlock_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": description,
                    "attempts": queryset.order_by("username", "ip_address"),
                    "logins": logins,
                    "opts": self.model._meta,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                },
            )
        unlocked = [login for login in logins if staff_login_unlock(username=login, actor=request.user)]
        if not unlocked:
            self.message_user(request, "Nothing to unlock: those records were already gone.", messages.INFO)
            return None
        message = ngettext(
            "%(count)d login unlocked: %(logins)s.", "%(count)d logins unlocked: %(logins)s.", len(unlocked)
        )
        self.message_user(request, message % {"count": len(unlocked), "logins": ", ".join(unlocked)}, messages.SUCCESS)
        return None

    def changelist_view(self, request, extra_context=None):
        title = "Failed sign-ins: select a login to unlock it"
        return super().changelist_view(request, {"title": title, **(extra_context or {})})

    def has_unlock_permission(self, request):
        # Unlocking deletes axes' records: whoever may delete them may unlock (superusers; no role may).
        return request.user.has_perm("axes.delete_accessattempt")

    def has_delete_permission(self, request, obj=None):
        # A plain delete lifts the lock-out too, without the record that Unlock keeps.
        return False
