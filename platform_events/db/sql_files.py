"""Migrations run SQL kept in files beside each app: ``<app>/sql/NNNN_what.sql`` and its
``NNNN_what.reverse.sql``. A released file is never edited; a change is a new file."""

from pathlib import Path

from django.db import migrations


def run_sql_file(migration_file: str, name: str) -> migrations.RunSQL:
    """RunSQL for ``<app>/sql/<name>.sql``, reversed by ``<app>/sql/<name>.reverse.sql``."""
    sql_dir = Path(migration_file).resolve().parent.parent / "sql"
    return migrations.RunSQL(
        sql=(sql_dir / f"{name}.sql").read_text(),
        reverse_sql=(sql_dir / f"{name}.reverse.sql").read_text(),
    )
