"""The inbox's mail backend (lifecycle/dev_inbox/backend.py): one whole .eml file per message, private to
its owner, the old ones removed as new ones come."""

import os
import stat
import time
from email import message_from_bytes

from django.core.mail import EmailMessage

from lifecycle.dev_inbox.backend import KEEP_DAYS, InboxBackend


def send(directory, *subjects) -> int:
    return InboxBackend(file_path=directory).send_messages(
        [EmailMessage(subject, f"Body of {subject}", "from@localhost", ["to@example.com"]) for subject in subjects]
    )


def test_each_message_is_a_file_of_its_own_named_in_the_order_sent(tmp_path):
    directory = tmp_path / "mail"
    assert send(directory, "first", "second") == 2
    assert send(directory, "third") == 1
    files = sorted(directory.iterdir())
    assert [message_from_bytes(path.read_bytes())["Subject"] for path in files] == ["first", "second", "third"]
    assert all(path.suffix == ".eml" for path in files)  # no partial file left behind


def test_the_directory_and_the_files_are_the_owners_alone(tmp_path):
    """They hold working links and codes."""
    directory = tmp_path / "mail"
    send(directory, "private")
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert [stat.S_IMODE(path.stat().st_mode) for path in directory.iterdir()] == [0o600]


def test_messages_older_than_the_kept_days_go_when_a_new_one_comes(tmp_path):
    directory = tmp_path / "mail"
    send(directory, "old", "recent")
    old, recent = sorted(directory.iterdir())
    long_ago = time.time() - KEEP_DAYS * 86_400 - 60
    os.utime(old, (long_ago, long_ago))
    send(directory, "new")
    assert old not in list(directory.iterdir()) and recent in list(directory.iterdir())
    assert len(list(directory.iterdir())) == 2


def test_nothing_to_send_makes_nothing(tmp_path):
    assert InboxBackend(file_path=tmp_path / "mail").send_messages([]) == 0
    assert not (tmp_path / "mail").exists()
