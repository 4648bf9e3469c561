"""The pages' middleware, which the client API's requests go past.

A request under /api/ carries a bearer key, never a cookie: the API reads no session, sets no
cookie, has no signed-in staff user and shows no messages. For its requests these three would only
cost time (docs/measurements.md, "Client API figures"). Each class is the stock one, which the
admin's checks ask for and every page keeps, with the API's requests handed straight on. What the
API's answers need stays in MIDDLEWARE around them: the request log, the security headers
(SecurityMiddleware, the Content-Security-Policy, X-Frame-Options), Content-Length
(CommonMiddleware) and the metrics. Django's CsrfViewMiddleware stays as it is for every request
(check --deploy asks for it by name; it lets the API's operations, all exempt, through at once).
"""

from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions

API_PATH = "/api/"


class PagesOnly:
    """A middleware that passes a request under API_PATH on untouched (in either of Django's modes:
    ``get_response`` answers a coroutine when the stack is asynchronous)."""

    def __call__(self, request):
        if request.path_info.startswith(API_PATH):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(PagesOnly, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(PagesOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(PagesOnly, messages.MessageMiddleware):
    pass
