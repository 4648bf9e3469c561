"""Reading the kept messages: the list (newest first) and one message with its link and code picked out."""

import re
from dataclasses import dataclass, field
from datetime import datetime
from email import policy
from email.parser import BytesHeaderParser, BytesParser
from email.utils import parsedate_to_datetime
from pathlib import Path

from django.conf import settings

# A kept message's name (backend.py): nothing else, so a name from a URL cannot leave the directory.
NAME = re.compile(r"^[0-9]{8}T[0-9]{6}\.[0-9]{6}-[0-9a-f]{8}$")
# The list stops here: a week of a busy development box, read from the headers alone.
LIST_LIMIT = 200
_LINK = re.compile(r"https?://[^\s<>\"']+")
# The e-mails' "enter this code ...: 12345" (templates/emails/*.txt).
_CODE = re.compile(r"\bcode\b[^\n]*?\b([0-9]{5})\b")


@dataclass
class Kept:
    name: str
    sent_at: datetime | None
    to: str
    subject: str
    text: str = ""
    links: list[str] = field(default_factory=list)
    code: str | None = None


def kept_messages(directory: Path | None = None) -> list[Kept]:
    """The newest LIST_LIMIT messages, newest first, from their headers."""
    paths = sorted(_directory(directory).glob("*.eml"), reverse=True)[:LIST_LIMIT]
    messages = []
    for path in paths:
        try:
            with open(path, "rb") as file:
                headers = BytesHeaderParser(policy=policy.default).parse(file)
        except FileNotFoundError:  # removed since the directory was listed
            continue
        messages.append(_kept(path.stem, headers))
    return messages


def kept_message(name: str, directory: Path | None = None) -> Kept | None:
    """The message ``name``, whole; None when there is none by that name."""
    if not NAME.match(name):
        return None
    try:
        message = BytesParser(policy=policy.default).parsebytes((_directory(directory) / f"{name}.eml").read_bytes())
    except FileNotFoundError:
        return None
    kept = _kept(name, message)
    body = message.get_body(preferencelist=("plain",))
    kept.text = body.get_content() if body is not None else ""
    kept.links = [link.rstrip(".,;:)") for link in _LINK.findall(kept.text)]
    if found := _CODE.search(kept.text):
        kept.code = found.group(1)
    return kept


def _kept(name: str, headers) -> Kept:
    try:
        sent_at = parsedate_to_datetime(headers["Date"]) if headers["Date"] else None
    except (TypeError, ValueError):
        sent_at = None
    return Kept(name=name, sent_at=sent_at, to=str(headers["To"] or ""), subject=str(headers["Subject"] or ""))


def _directory(directory: Path | None) -> Path:
    return Path(directory or settings.DEV_INBOX_DIR)
