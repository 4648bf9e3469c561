"""The product's site with the benches' own views beside it: the client API's per-request costs, one
step at a time, through the same server and middleware as the API (bench/api.py, bench/load.py).

    gunicorn bench.bare_site:application        (or bench/runserver_nodelay.py, which serves this)

Under /bench/, each view adds one cost to the one before, as the API's read and provisioning pay them:

- GET  accounts/{id}           a bare Django view: the account's row as JSON (AccountOut's fields);
- GET  keyed/accounts/{id}     + the bearer key's client looked up (api_client_by_key);
- GET  counted/accounts/{id}   + its rate-limit hit counted with the look-up (api_client_called, the API's);
- POST counted/accounts        the key and rate as above, then account_provision() with the JSON body;
- POST once/accounts           + the Idempotency-Key's bookkeeping around it (run_once, the API's).

What is left between the last of each and the API's own operation is django-ninja (parsing, pydantic
validation and rendering), the address rules' query and the audit context. The product's URLs are
all served as they are; lifecycle.urls never includes these.
"""

import json
from datetime import timedelta

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, JsonResponse
from django.test.utils import override_settings
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

from lifecycle.wsgi import application  # Django set up with the product's settings

# isort: split
from accounts.models import Account  # noqa: E402 (after the set-up)
from accounts.services import account_provision  # noqa: E402
from lifecycle import urls as product_urls  # noqa: E402
from lifecycle.api.auth import per_client_limit  # noqa: E402
from lifecycle.api.schemas import AccountOut  # noqa: E402
from platform_events.api.clients import api_client_by_key, api_client_called  # noqa: E402
from platform_events.api.idempotency import Outcome, idempotency_key, request_fingerprint, run_once  # noqa: E402

__all__ = ["application"]

FIELDS = list(AccountOut.model_fields)


def _key(request) -> str:
    return request.headers.get("Authorization", "").removeprefix("Bearer ").strip()


def _account(account_id: int) -> HttpResponse:
    row = Account.objects.filter(pk=account_id).values(*FIELDS).first()
    if row is None:
        return JsonResponse({"detail": "no such account"}, status=404)
    return JsonResponse(row, encoder=DjangoJSONEncoder)


def bare(request, account_id: int):
    return _account(account_id)


def keyed(request, account_id: int):
    if api_client_by_key(_key(request)) is None:
        return HttpResponse(status=401)
    return _account(account_id)


def counted(request, account_id: int):
    if api_client_called(_key(request), limit=per_client_limit()) is None:
        return HttpResponse(status=401)
    return _account(account_id)


def _provisioned(client, body: dict) -> Outcome:
    account = account_provision(email=body["email"], login=body["login"], actor=client)
    return Outcome(201, json.loads(json.dumps({f: getattr(account, f) for f in FIELDS}, cls=DjangoJSONEncoder)))


@csrf_exempt
def provision(request):
    client = api_client_called(_key(request), limit=per_client_limit())
    if client is None:
        return HttpResponse(status=401)
    outcome = _provisioned(client, json.loads(request.body))
    return JsonResponse(outcome.body, status=outcome.status)


@csrf_exempt
def provision_once(request):
    client = api_client_called(_key(request), limit=per_client_limit())
    if client is None:
        return HttpResponse(status=401)
    body = json.loads(request.body)
    return run_once(
        client_id=client.pk,
        key=idempotency_key(request.headers.get("Idempotency-Key")),
        fingerprint=request_fingerprint(method=request.method, path=request.get_full_path(), body=request.body),
        work=lambda: _provisioned(client, body),
        lease=timedelta(seconds=settings.API_IDEMPOTENCY_LEASE_SECONDS),
        ttl=timedelta(hours=settings.API_IDEMPOTENCY_HOURS),
        savepoints=False,  # as the API's provisioning
    )


urlpatterns = [
    path("bench/accounts/<int:account_id>", bare),
    path("bench/keyed/accounts/<int:account_id>", keyed),
    path("bench/counted/accounts/<int:account_id>", counted),
    path("bench/counted/accounts", provision),
    path("bench/once/accounts", provision_once),
    path("", include(product_urls)),
]
handler403, handler500 = product_urls.handler403, product_urls.handler500

override_settings(ROOT_URLCONF=__name__).enable()
