"""``/metrics``: the Prometheus exposition, for a scraper holding METRICS_TOKEN only.

No session counts, a superuser's included: the figures are for the monitoring, and a page behind the
admin's login would also be behind its lock-out and its redirects. Without METRICS_TOKEN the path
answers 404, as any path that does not exist.
"""

import os

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.cache import never_cache
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

from lifecycle.ops.metrics.figures import ProductFigures


def scrape_registry() -> CollectorRegistry:
    """What one scrape exposes: the request latencies and refusal counts, and the product's figures.

    Under gunicorn (PROMETHEUS_MULTIPROC_DIR set) the counts are every worker's, added up from the
    files prometheus_client keeps there; otherwise this process's own (the default registry)."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)  # a registry is a collector too: all of this process's metrics
    registry.register(ProductFigures())
    return registry


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_TOKEN:
        raise Http404  # turned off: the endpoint does not exist
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return HttpResponse(
            "A bearer token is required.\n",
            status=401,
            content_type="text/plain",
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    if not constant_time_compare(token.strip(), settings.METRICS_TOKEN):
        return HttpResponse("Wrong token.\n", status=403, content_type="text/plain")
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(scrape_registry()), content_type=content_type)
