"""The admin site: Django's, with the dashboard on its index page."""

from django.contrib import admin

from lifecycle.dashboard import dashboard


class LifecycleAdminSite(admin.AdminSite):
    site_header = "Lifecycle back-office"
    site_title = "Lifecycle back-office"
    index_title = "Dashboard"

    def index(self, request, extra_context=None):
        return super().index(request, {**(extra_context or {}), "dashboard": dashboard(request.user)})
