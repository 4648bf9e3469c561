"""A scratch database for a bench (``<name>_bench``), made and migrated by the owner role and dropped
afterwards; the runtime role's connection ("default") is pointed at it too."""

from django.db import connections


def create() -> str:
    owner, runtime = connections["owner"], connections["default"]
    name = f"{runtime.settings_dict['NAME']}_bench"
    owner.settings_dict["TEST"]["NAME"] = name
    owner.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False, serialize=False)
    runtime.close()
    runtime.settings_dict["NAME"] = name
    return name


def destroy(name: str) -> None:
    connections["default"].close()
    connections["owner"].creation.destroy_test_db(name, verbosity=0)
