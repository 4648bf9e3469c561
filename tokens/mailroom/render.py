"""The e-mail of a token: templates/emails/<action>.subject.txt, .txt and .html."""

from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from tokens.links import landing_path
from tokens.models import Token


def render_mail(token: Token) -> EmailMultiAlternatives:
    account = token.account
    context = {
        "login": account.login,
        "link": f"{settings.PUBLIC_BASE_URL}{landing_path(token)}",
        "code": token.code,
        "expires_at": token.expires_at,
        "valid_minutes": max(1, round((token.expires_at - token.created_at).total_seconds() / 60)),
    }
    name = f"emails/{token.action}"
    subject = " ".join(render_to_string(f"{name}.subject.txt", context).split())
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string(f"{name}.txt", context),
        to=[account.email],
        headers={
            # The same Message-ID on a re-sent copy lets mail servers and clients fold duplicates.
            "Message-ID": f"<token-{token.pk}@{urlsplit(settings.PUBLIC_BASE_URL).hostname}>",
            "X-Lifecycle-Token": str(token.pk),
        },
    )
    message.attach_alternative(render_to_string(f"{name}.html", context), "text/html")
    return message
