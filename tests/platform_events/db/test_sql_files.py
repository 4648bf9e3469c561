"""Released SQL files are frozen (their SHA-256 in <app>/sql/SHA256SUMS) and numbered like their migrations."""

from pathlib import Path

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

from platform_events.db.sql_files import frozen_sums, run_sql_file, sha256

SQL_DIRS = [Path(app.path) / "sql" for app in apps.get_app_configs() if (Path(app.path) / "sql").is_dir()]


def test_the_apps_with_sql_are_found():
    assert {d.parent.name for d in SQL_DIRS} == {"platform_events", "accounts", "tokens"}


@pytest.mark.parametrize("sql_dir", SQL_DIRS, ids=lambda d: d.parent.name)
def test_no_released_sql_file_has_changed(sql_dir):
    changed = [name for name, digest in frozen_sums(sql_dir).items() if sha256(sql_dir / name) != digest]
    assert not changed, (
        f"released SQL files changed in {sql_dir}: {changed}. A released file is never edited:"
        " put the change in a new file loaded by a new migration."
    )


@pytest.mark.parametrize("sql_dir", SQL_DIRS, ids=lambda d: d.parent.name)
def test_every_sql_file_is_in_the_manifest(sql_dir):
    unlisted = sorted({path.name for path in sql_dir.glob("*.sql")} - set(frozen_sums(sql_dir)))
    assert not unlisted, (
        f"{sql_dir} has SQL files its SHA256SUMS does not list: {unlisted}."
        f" Add them with: cd {sql_dir.relative_to(sql_dir.parent.parent)} && sha256sum {' '.join(unlisted)} >> SHA256SUMS"
    )


@pytest.mark.parametrize("sql_dir", SQL_DIRS, ids=lambda d: d.parent.name)
def test_every_sql_file_is_loaded_by_the_migration_of_its_number(sql_dir):
    migrations = {
        path.name.split("_", 1)[0]: path.read_text() for path in (sql_dir.parent / "migrations").glob("0*.py")
    }
    for path in sql_dir.glob("*.sql"):
        name = path.name.removesuffix(".sql").removesuffix(".reverse")
        assert (sql_dir / f"{name}.sql").exists() and (sql_dir / f"{name}.reverse.sql").exists(), name
        assert f'"{name}"' in migrations.get(name.split("_", 1)[0], ""), f"no migration of its number loads {path}"


def test_a_migration_cannot_load_a_file_of_another_number(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="loads only SQL files of its own number"):
        run_sql_file(str(tmp_path / "migrations" / "0004_search.py"), "0003_search")
