"""Admin lists filter only by what they declare, with values their columns can hold.

Django's ``ModelAdmin.lookup_allowed`` accepts any lookup on a model's own fields, listed filter or
not: ``/admin/tokens/token/?code__startswith=5`` answers "1 token" or "0 tokens", and a few dozen
such requests read a token's code (issue 8). The admin site mixes ``DeclaredLookupsOnly`` into every
``ModelAdmin`` it registers (lifecycle/admin_site.py), Django's and other apps' included, so a query
string may only carry the parameters of the declared list filters (and an admin's ``extra_lookups``);
anything else, or a value the column cannot hold (``?status=bogus`` on an enum, ``?actor_ip=x``, a
NUL byte), answers 400 instead of a database error.

Each declared filter says which values it takes: a field's own filter, what its column can hold; a
``SimpleListFilter``, one of its choices; a filter that reads its parameters through a form of its
own (django-admin-rangefilter's ``created_at__range__gte``), what that form's field accepts.
"""

import datetime
from collections.abc import Callable

from django.contrib.admin.filters import FieldListFilter, SimpleListFilter
from django.contrib.admin.utils import NotRelationField, get_fields_from_path, prepare_lookup_value
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models.constants import LOOKUP_SEP
from django.forms import BaseForm, MultiValueField
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
        accepts = self.declared_parameters(request).get(lookup)
        return accepts is not None and accepts(value)

    def declared_lookups(self, request) -> set[str]:
        """The query-string parameters of the list filters, as Django's ChangeList builds them."""
        return set(self.declared_parameters(request))

    def declared_parameters(self, request) -> dict[str, Callable[[str], bool]]:
        """Each parameter a list filter (or ``extra_lookups``) reads, with the check of its values."""
        # The parameters' names do not depend on the request; a filter may still want one to be built.
        request = request or HttpRequest()
        accepted = {lookup: _column_value_check(self.model, lookup) for lookup in self.extra_lookups}
        for item in self.get_list_filter(request):
            spec = _filter_spec(item, request, self)
            for parameter in spec.expected_parameters():
                accepted[parameter] = _value_check(spec, parameter, self.model)
        if self.date_hierarchy:
            for part in ("year", "month", "day"):
                lookup = f"{self.date_hierarchy}__{part}"
                accepted[lookup] = _column_value_check(self.model, lookup)
        return accepted


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


def _value_check(spec, parameter: str, model) -> Callable[[str], bool]:
    """How the filter ``spec`` tells a value of ``parameter`` it can use from one it cannot."""
    form = getattr(spec, "form", None)
    if isinstance(form, BaseForm) and (form_field := _form_field(form, parameter)):
        return lambda value: _form_field_accepts(form_field, value)
    if isinstance(spec, SimpleListFilter):
        choices = {str(choice) for choice, _ in spec.lookup_choices}
        return lambda value: value in choices
    return _column_value_check(model, parameter)


def _form_field(form: BaseForm, parameter: str):
    """The field of a filter's form that reads ``parameter``: a field of that name, or one part of a
    field split over several inputs (``created_at__range__gte_0``, the date of a date and time)."""
    if parameter in form.fields:
        return form.fields[parameter]
    name, _, index = parameter.rpartition("_")
    field = form.fields.get(name)
    if isinstance(field, MultiValueField) and index.isdigit() and int(index) < len(field.fields):
        return field.fields[int(index)]
    return None


def _form_field_accepts(field, value: str) -> bool:
    try:
        cleaned = field.clean(value)
    except ValidationError:
        return False
    if isinstance(cleaned, datetime.date):  # datetimes are dates too
        day = cleaned.date() if isinstance(cleaned, datetime.datetime) else cleaned
        return FIRST_DAY <= day <= LAST_DAY
    return True


def _column_value_check(model, lookup: str) -> Callable[[str], bool]:
    return lambda value: value_fits(model, lookup, value)


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
