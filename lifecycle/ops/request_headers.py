"""Request headers without NUL, before anything stores them.

PostgreSQL text cannot hold a NUL: a User-Agent or Accept header carrying one would fail django-axes'
login rows and the audit context, and the admin login would answer 500 without counting the failure.
RFC 9110 (section 5.5) lets a recipient replace each NUL in a field value with
a space before processing it, which this does, first of all the middleware.
"""


def nul_free_headers(get_response):
    def middleware(request):
        for name, value in list(request.META.items()):
            if name.startswith("HTTP_") and isinstance(value, str) and "\x00" in value:
                request.META[name] = value.replace("\x00", " ")
        return get_response(request)

    return middleware
