"""SCIM's errors (RFC 7644 §3.12): ``status`` as a string, a ``scimType`` where the RFC names one,
and one sentence in ``detail``, as application/scim+json."""

import json

from django.http import HttpResponse

CONTENT_TYPE = "application/scim+json"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimError(Exception):
    """An answer other than success: ``status``, ``detail`` and, for a 400 or a 409, a ``scim_type``
    (invalidFilter, invalidValue, uniqueness, mutability, invalidSyntax, tooMany, ...)."""

    def __init__(self, status: int, detail: str, scim_type: str | None = None, headers: dict | None = None):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.scim_type = scim_type
        self.headers = headers or {}

    def response(self) -> HttpResponse:
        body = {"schemas": [ERROR_SCHEMA], "status": str(self.status), "detail": self.detail}
        if self.scim_type:
            body["scimType"] = self.scim_type
        answer = scim_response(body, status=self.status)
        for name, value in self.headers.items():
            answer[name] = value
        return answer


def scim_response(body: dict, *, status: int = 200) -> HttpResponse:
    return HttpResponse(json.dumps(body), status=status, content_type=CONTENT_TYPE)
