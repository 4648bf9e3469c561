"""Admin lists filter only by what they declare, with values their filters can take.

Django's ``ModelAdmin.lookup_allowed`` accepts any lookup on a model's own fields, listed filter or
not: ``/admin/tokens/token/?code__startswith=5`` answers "1 token" or "0 tokens", and a few dozen
such requests read a token's code. The admin site mixes ``DeclaredLookupsOnly`` into every
``ModelAdmin`` it registers (lifecycle/backoffice/site.py), Django's and other apps' included, so a query
string may only carry the parameters of the declared list filters (and an admin's ``extra_lookups``);
anything else, or a value the filter cannot take (``?status=bogus`` on an enum, ``?actor_ip=x``, a
NUL byte, a date range's ``?occurred_at__range__gte=yesterday``), answers 400 instead of a database
error or a filter silently left out.

What a value must be depends on the filter that reads it:

- a field's filter (``status``, ``created_at__gte``): a value its column can hold;
- a filter with a form of its own (django-admin-rangefilter's ``<field>__range__gte``, and the date
  and time halves ``..._0``/``..._1`` of its date-time ranges): what that form field accepts, empty
  included (the filter's own "Search" button sends both ends, one of them often empty);
- a ``SimpleListFilter``: what its ``value_fits(value)`` accepts if it has one, or else one of its
  own choices.
"""

import datetime
from collections.abc import Callable
from functools import partial

from django import forms
from django.contrib.admin.filters import FieldListFilter, SimpleListFilter
from django.contrib.admin.utils import NotRelationField, get_fields_from_path, prepare_lookup_value
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest

# Lookups whose value is one value of the column (``__in``: a comma-separated list of them).
VALUE_LOOKUPS = {"exact", "iexact", "gt", "gte", "lt", "lte", "in"}

# The first and last days a form-read date filter may name: a range filter turns a day into its first
# or last moment in TIME_ZONE, which on 0001-01-01 or 9999-12-31 leaves Python's calendar (a 500).
FIRST_DAY, LAST_DAY = datetime.date.min + datetime.timedelta(days=1), datetime.date.max - datetime.timedelta(days=1)


class DeclaredLookupsOnly:
    # Parameters an admin accepts besides its list filters' own, e.g. links from another page.
    extra_lookups: frozenset[str] = frozenset()

    def lookup_allowed(self, lookup, value, request=None):
        if "\x00" in value:  # PostgreSQL text cannot hold NUL
            return False
        fits = self.declared_lookup_checks(request).get(lookup)
        return fits is not None and fits(value)

    def declared_lookups(self, request) -> set[str]:
        """The query-string parameters of the list filters, as Django's ChangeList builds them."""
        return set(self.declared_lookup_checks(request))

    def declared_lookup_checks(self, request) -> dict[str, Callable[[str], bool]]:
        """Each declared parameter, with the check its value must pass (see the module's docstring)."""
        checks = {name: partial(value_fits, self.model, name) for name in self.extra_lookups}
        # Some filters keep state on the request (rangefilter's scripts, once per page): give them one.
        request = request if request is not None else HttpRequest()
        for item in self.get_list_filter(request):
            spec = _filter_spec(item, request, self)
            checks.update({name: _value_check(spec, name, self.model) for name in spec.expected_parameters()})
        if self.date_hierarchy:
            for part in ("year", "month", "day"):
                name = f"{self.date_hierarchy}__{part}"
                checks[name] = partial(value_fits, self.model, name)
        return checks


def _filter_spec(item, request, model_admin):
    model = model_admin.model
    if isinstance(item, (list, tuple)):  # (field path, FieldListFilter subclass)
        field_path, filter_class = item
    elif isinstance(item, str):  # a field path: the filter Django registers for its type
        field_path, filter_class = item, FieldListFilter.create
    else:  # a SimpleListFilter subclass
        return item(request, {}, model, model_admin)
    field = get_fields_from_path(model, field_path)[-1]
    return filter_class(field, request, {}, model, model_admin, field_path=field_path)


def _value_check(spec, name: str, model) -> Callable[[str], bool]:
    form = getattr(spec, "form", None)
    if isinstance(form, forms.BaseForm):
        return partial(form_field_accepts, form, name)
    if isinstance(spec, SimpleListFilter):
        own_check = getattr(spec, "value_fits", None)
        return own_check or {str(value) for value, _ in spec.lookup_choices}.__contains__
    return partial(value_fits, model, name)


def form_field_accepts(form: forms.BaseForm, name: str, value: str) -> bool:
    """Whether the filter's form field ``name`` (or, for ``<field>_<n>``, the n-th part of a split
    field such as a date and a time) accepts ``value``."""
    field = form.fields.get(name)
    if field is None:
        base, _, index = name.rpartition("_")
        parts = getattr(form.fields.get(base), "fields", ())
        if not index.isdigit() or int(index) >= len(parts):
            return False
        field = parts[int(index)]
    try:
        cleaned = field.clean(value)
    except ValidationError:
        return False
    if isinstance(cleaned, datetime.date):  # datetimes are dates too
        day = cleaned.date() if isinstance(cleaned, datetime.datetime) else cleaned
        return FIRST_DAY <= day <= LAST_DAY
    return True


def value_fits(model, lookup: str, value: str) -> bool:
    """Whether a lookup's value is one the column can hold (or a flag, for ``__isnull``)."""
    if "\x00" in value:  # PostgreSQL text cannot hold NUL
        return False
    *path, last = lookup.split(LOOKUP_SEP)
    if last not in VALUE_LOOKUPS:
        path, last = [*path, last], "exact"
    if path and path[-1] == "isnull":
        return True
    try:
        field = get_fields_from_path(model, LOOKUP_SEP.join(path))[-1]
    except (FieldDoesNotExist, NotRelationField):
        return False
    if field.is_relation:
        field = field.target_field
    values = prepare_lookup_value(lookup, value) if last == "in" else [value]
    try:
        for one in values:
            field.clean(one, None)
    except ValidationError:
        return False
    return True
