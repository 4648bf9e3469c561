"""The SCIM views, which lifecycle/scim/urls.py imports only at the first SCIM request, imported and
found at deploy (``check --deploy``), so that a broken install or a misnamed view stops the deploy
instead of answering every SCIM request with a 500."""

from importlib import import_module

from django.core import checks


@checks.register(checks.Tags.urls, deploy=True)
def check_scim_views(app_configs, **kwargs):
    from lifecycle.scim.urls import SERVED, VIEWS

    try:
        views = import_module(VIEWS)
    except Exception as error:  # whatever the import raises is the finding
        return [checks.Error(f"{VIEWS} cannot be imported: {error!r}", id="lifecycle.E001")]
    return [
        checks.Error(f"the SCIM URLconf serves {name!r}, which {VIEWS} does not have", id="lifecycle.E002")
        for name in sorted(SERVED)
        if not callable(getattr(views, name, None))
    ]
