"""``/dev/mail/``: the kept messages, and one message. A staff login is required, as for the back-office:
the messages hold working links and codes for any account, and a development server is often reached
through something that makes every request come from 127.0.0.1 (a tunnel, a forwarded port, a reverse
proxy on the same machine), so the client's address cannot tell the developer from anyone else."""

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404
from django.template.response import TemplateResponse

from lifecycle.dev_inbox.backend import INBOX_BACKEND
from lifecycle.dev_inbox.inbox import LIST_LIMIT, kept_message, kept_messages


@staff_member_required
def inbox(request):
    messages = kept_messages()
    return TemplateResponse(
        request,
        "dev_inbox/inbox.html",
        {
            **admin.site.each_context(request),
            "title": "Development inbox",
            "kept": messages,
            "limit_reached": len(messages) == LIST_LIMIT,
            "limit": LIST_LIMIT,
            "directory": settings.DEV_INBOX_DIR,
            "elsewhere": settings.EMAIL_BACKEND != INBOX_BACKEND,
        },
    )


@staff_member_required
def message(request, name: str):
    kept = kept_message(name)
    if kept is None:
        raise Http404("No kept message by that name.")
    return TemplateResponse(
        request,
        "dev_inbox/message.html",
        {**admin.site.each_context(request), "title": kept.subject or "(no subject)", "message": kept},
    )
