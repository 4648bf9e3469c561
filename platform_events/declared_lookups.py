"""Admin lists filter only by what they declare, with values their columns can hold.

Django's ``ModelAdmin.lookup_allowed`` accepts any lookup on a model's own fields, listed filter or
not: ``/admin/tokens/token/?code__startswith=5`` answers "1 token" or "0 tokens", and a few dozen
such requests read a token's code (issue 8). The admin site mixes ``DeclaredLookupsOnly`` into every
``ModelAdmin`` it registers (lifecycle/admin_site.py), Django's and other apps' included, so a query
string may only carry the parameters of the declared list filters (and an admin's ``extra_lookups``);
anything else, or a value the column cannot hold (``?status=bogus`` on an enum, ``?actor_ip=x``, a
NUL byte) or a SimpleListFilter does not offer, answers 400 instead of a database error.
"""

from django.contrib.admin.filters import FieldListFilter, SimpleListFilter
from django.contrib.admin.utils import NotRelationField, get_fields_from_path, prepare_lookup_value
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models.constants import LOOKUP_SEP

# Lookups whose value is one value of the column (``__in``: a comma-separated list of them).
VALUE_LOOKUPS = {"exact", "iexact", "gt", "gte", "lt", "lte", "in"}


class DeclaredLookupsOnly:
    # Parameters an admin accepts besides its list filters' own, e.g. links from another page.
    extra_lookups: frozenset[str] = frozenset()

    def lookup_allowed(self, lookup, value, request=None):
        # A SimpleListFilter's parameter names no column: its value must be one of the filter's choices.
        if (choices := self.simple_filter_choices(request).get(lookup)) is not None:
            return value in choices
        return lookup in self.declared_lookups(request) and value_fits(self.model, lookup, value)

    def simple_filter_choices(self, request) -> dict[str, set[str]]:
        """The parameter and the values of each SimpleListFilter the list declares."""
        choices = {}
        for item in self.get_list_filter(request):
            if isinstance(item, type) and issubclass(item, SimpleListFilter):
                spec = item(request, {}, self.model, self)
                choices[spec.parameter_name] = {str(value) for value, _ in spec.lookup_choices}
        return choices

    def declared_lookups(self, request) -> set[str]:
        """The query-string parameters of the list filters, as Django's ChangeList builds them."""
        names = set(self.extra_lookups)
        for item in self.get_list_filter(request):
            names.update(_filter_spec(item, request, self).expected_parameters())
        if self.date_hierarchy:
            names.update(f"{self.date_hierarchy}__{part}" for part in ("year", "month", "day"))
        return names


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
