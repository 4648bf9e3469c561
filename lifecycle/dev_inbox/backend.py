"""A mail backend that keeps each message as its own ``.eml`` file: named by the time it was sent (so the
names sort oldest first), written whole before it appears (a reader never sees half a message), readable
by its owner only (the messages hold working links and codes)."""

import os
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend

# Older messages are removed as new ones arrive: their links and codes stopped working long before.
KEEP_DAYS = 7
# As EMAIL_BACKEND names it (lifecycle/settings.py).
INBOX_BACKEND = f"{__name__}.InboxBackend"


class InboxBackend(BaseEmailBackend):
    def __init__(self, *args, file_path: str | Path | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.directory = Path(file_path or settings.DEV_INBOX_DIR)

    def send_messages(self, email_messages) -> int:
        if not email_messages:
            return 0
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        kept = 0
        for message in email_messages:
            try:
                self._keep(message.message().as_bytes())
            except Exception:
                if not self.fail_silently:
                    raise
            else:
                kept += 1
        remove_old(self.directory)
        return kept

    def _keep(self, data: bytes) -> None:
        name = f"{datetime.now(UTC):%Y%m%dT%H%M%S.%f}-{secrets.token_hex(4)}"
        partial = self.directory / f".{name}.partial"
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(partial, self.directory / f"{name}.eml")


def remove_old(directory: Path, *, days: int = KEEP_DAYS) -> None:
    cutoff = time.time() - days * 86_400
    for path in directory.glob("*.eml"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except FileNotFoundError:  # removed by another process sending at the same moment
            pass
