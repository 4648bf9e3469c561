from django.contrib.admin.apps import AdminConfig


class LifecycleAdminConfig(AdminConfig):
    default_site = "lifecycle.admin_site.LifecycleAdminSite"
