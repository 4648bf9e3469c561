"""django-prometheus's middleware, with one repair: its "before the view" step reads Content-Length with
int(), so a malformed header (``14x``) would make every request a 500 before any view could refuse
it (tests/lifecycle/api/test_api_attacks.py). Here such a request is counted as a body of 0 bytes and
goes on to the view, which answers 400."""

from django_prometheus.middleware import PrometheusAfterMiddleware
from django_prometheus.utils import Time


class RequestLatencyAfter(PrometheusAfterMiddleware):
    def process_request(self, request):
        transport, method = self._transport(request), self._method(request)
        self.label_metric(self.metrics.requests_by_method, request, method=method).inc()
        self.label_metric(self.metrics.requests_by_transport, request, transport=transport).inc()
        if request.headers.get("x-requested-with") == "XMLHttpRequest":
            self.label_metric(self.metrics.requests_ajax, request).inc()
        try:
            content_length = max(int(request.headers.get("content-length") or 0), 0)
        except ValueError:
            content_length = 0
        self.label_metric(self.metrics.requests_body_bytes, request).observe(content_length)
        request.prometheus_after_middleware_event = Time()
