"""A scratch database for a bench (``<name>_bench``), made and migrated by the owner role and dropped
afterwards; the runtime role's connection ("default") is pointed at it meanwhile."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections


@contextmanager
def scratch_database() -> Iterator[str]:
    """The scratch database, named ``<name>_bench`` after the configured one, for the ``with`` block; its
    name is what the block gets. Dropped when the block ends, also by an error or Ctrl-C (one left by a
    killed run is replaced by the next)."""
    owner, runtime = connections["owner"], connections["default"]
    owner_name, runtime_name = owner.settings_dict["NAME"], runtime.settings_dict["NAME"]
    owner_test_name = owner.settings_dict["TEST"]["NAME"]
    name = f"{runtime_name}_bench"
    owner.settings_dict["TEST"]["NAME"] = name
    try:
        owner.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False, serialize=False)
        runtime.close()
        runtime.settings_dict["NAME"] = name
        yield name
    finally:
        connections.close_all()  # no session of this process may stay in it, or it cannot be dropped
        runtime.settings_dict["NAME"] = runtime_name
        # The owner's connection names the scratch database once it was made (migrated or not).
        if owner.settings_dict["NAME"] == name:
            owner.creation.destroy_test_db(owner_name, verbosity=0)
        owner.settings_dict["TEST"]["NAME"] = owner_test_name
