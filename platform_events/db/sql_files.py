"""Migrations run SQL kept in files beside each app: ``<app>/sql/NNNN_what.sql`` and its
``NNNN_what.reverse.sql``, numbered like the migration that loads them.

A released file is frozen: its SHA-256 stands in ``<app>/sql/SHA256SUMS`` (the format of
``sha256sum``, so ``cd <app>/sql && sha256sum -c SHA256SUMS`` checks it too), and a test fails when
a file and its sum disagree. A change is a new file and a new migration, never an edit.
"""

import hashlib
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.db import migrations

MANIFEST = "SHA256SUMS"


def run_sql_file(migration_file: str, name: str) -> migrations.RunSQL:
    """RunSQL for ``<app>/sql/<name>.sql``, reversed by ``<app>/sql/<name>.reverse.sql``.

    ``name`` starts with the migration's own number, so the files and the migrations that load
    them never drift apart.
    """
    migration = Path(migration_file).resolve()
    number = migration.name.split("_", 1)[0]
    if not name.startswith(f"{number}_"):
        raise ImproperlyConfigured(
            f"Migration {migration.name} loads sql/{name}.sql; a migration loads only SQL files of its own number"
            f" ({number}_...)."
        )
    sql_dir = migration.parent.parent / "sql"
    return migrations.RunSQL(
        sql=(sql_dir / f"{name}.sql").read_text(),
        reverse_sql=(sql_dir / f"{name}.reverse.sql").read_text(),
    )


def frozen_sums(sql_dir: Path) -> dict[str, str]:
    """The released files of a sql/ directory and their SHA-256, as its manifest lists them."""
    manifest = sql_dir / MANIFEST
    if not manifest.exists():
        return {}
    sums = {}
    for line in manifest.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.lstrip("*")] = digest
    return sums


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
