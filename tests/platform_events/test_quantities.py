"""quantity: a count with its noun in the form the count takes."""

import pytest

from platform_events.quantities import quantity


@pytest.mark.parametrize(
    ("count", "expected"), [(0, "0 assignments"), (1, "1 assignment"), (2, "2 assignments"), (-1, "-1 assignments")]
)
def test_one_takes_the_singular_every_other_count_the_plural(count, expected):
    """One assignment, any other number of assignments."""
    assert quantity(count, "assignment") == expected


def test_an_irregular_plural_is_given():
    """A noun whose plural is not singular + "s" takes the plural given."""
    assert (quantity(1, "entry", "entries"), quantity(3, "entry", "entries")) == ("1 entry", "3 entries")
