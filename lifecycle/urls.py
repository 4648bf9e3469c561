from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from lifecycle.api import site as api_site
from lifecycle.ops.metrics.views import metrics

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_site.urls(), "api"))),
    # Prometheus, with METRICS_TOKEN only (docs/production.md, "Metrics"); no slash, as scrapers ask for it.
    path("metrics", metrics, name="metrics"),
    # The development inbox (lifecycle/dev_inbox/): the e-mails kept under .local/mail/, with DEBUG on only.
    *([path("dev/mail/", include("lifecycle.dev_inbox.urls"))] if settings.DEBUG else []),
    path("", include("tokens.urls")),
]

handler500 = "lifecycle.ops.database_unavailable.server_error"
# The back-office's "not part of your role" page for staff there, the public look elsewhere.
handler403 = "lifecycle.error_pages.permission_denied"
