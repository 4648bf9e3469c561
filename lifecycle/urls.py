from django.conf import settings
from django.contrib import admin
from django.http import HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.utils.cache import patch_cache_control
from django.views.generic import RedirectView

from lifecycle.api import site as api_site
from lifecycle.ops.metrics.views import metrics


def favicon(request):
    """The icon, for clients that ask /favicon.ico without reading a page's <link rel="icon">: a redirect
    they keep a day (not for good: the icon's hashed name changes with a release)."""
    response = HttpResponseRedirect(static("lifecycle/favicon.svg"))
    patch_cache_control(response, public=True, max_age=86400)
    return response


# Every app's admin module registers its pages here, where the site is served (LifecycleAdminConfig, in
# lifecycle/apps.py, leaves them out of processes that serve no page).
admin.autodiscover()

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_site.urls(), "api"))),
    # SCIM 2.0 for identity providers (lifecycle/scim/; docs/scim.md).
    path("scim/v2/", include("lifecycle.scim.urls")),
    # Prometheus, with METRICS_TOKEN only (docs/production.md, "Metrics"); no slash, as scrapers ask for it.
    path("metrics", metrics, name="metrics"),
    # The development inbox (lifecycle/dev_inbox/): the e-mails kept under .local/mail/, with DEBUG on only.
    *([path("dev/mail/", include("lifecycle.dev_inbox.urls"))] if settings.DEBUG else []),
    # End users' own account (lifecycle/my_account/): its own session, never the admin's.
    path("account/", include("lifecycle.my_account.urls")),
    path("", include("tokens.urls")),
]

handler500 = "lifecycle.ops.database_unavailable.server_error"
# The back-office's "not part of your role" page for staff there, the public look elsewhere.
handler403 = "lifecycle.error_pages.permission_denied"
