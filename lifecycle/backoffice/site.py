"""The admin site: Django's, with the dashboard on its index page, and list filters limited to the
ones each admin declares (platform_events/admin_kit/lookups.py), for every model registered here."""

from django.contrib import admin
from django.db import transaction
from django.utils.functional import SimpleLazyObject

from lifecycle.backoffice.dashboard import dashboard
from platform_events.admin_kit.lookups import DeclaredLookupsOnly
from platform_events.audit.context import audit_context


class LifecycleAdminSite(admin.AdminSite):
    site_header = "Lifecycle back-office"
    site_title = "Lifecycle back-office"
    index_title = "Dashboard"

    def index(self, request, extra_context=None):
        return super().index(request, {**(extra_context or {}), "dashboard": dashboard(request, self)})

    def each_context(self, request):
        # The sidebar's app list written by the admin kit (templates/admin/nav_sidebar.html).
        return {**super().each_context(request), "quick_app_list": True}

    def get_app_list(self, request, app_label=None):
        """Django's, made when a page reads it: every page's context carries it for the sidebar, which
        the wide lists hide (templates/admin/tokens/token/change_list.html), and making it checks every
        registered model's permissions and reverses its URLs (1.3 ms of a list's CPU, bench/admin.py)."""
        return SimpleLazyObject(lambda: super(LifecycleAdminSite, self).get_app_list(request, app_label))

    def password_change(self, request, extra_context=None):
        # A staff member's own new password: audited with them as the actor (staff_user.password_changed).
        with transaction.atomic(), audit_context(actor=request.user, request=request):
            return super().password_change(request, extra_context)

    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, DeclaredLookupsOnly):
            # Django's, django-q2's and django-axes' admins too: no model is filtered by an undeclared field.
            admin_class = type(
                admin_class.__name__, (DeclaredLookupsOnly, admin_class), {"__module__": admin_class.__module__}
            )
        super().register(model_or_iterable, admin_class, **options)
