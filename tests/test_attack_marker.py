"""The attack tests live beside the tests of what they attack, in modules named ``test_<module>_attacks.py``
and marked ``attack``: `pytest -m attack` runs them all."""

import fnmatch
import subprocess
import sys
from pathlib import PurePosixPath

import pytest

from tests.support import ROOT

# Both tests read one collection of the whole suite: one worker makes it for both.
pytestmark = pytest.mark.xdist_group("attack_marker")

# At least this many attack tests (parametrized cases counted): lower it only when one is removed on purpose.
ATTACK_TESTS = 646

# pytest's collection of the whole suite, each test's id printed after "attack" or "plain": whether its
# attack mark selects it (-m attack reads the same marks).
LISTING = """
import sys
import pytest

class Listing:
    def pytest_collection_finish(self, session):
        for item in session.items:
            print("attack" if item.get_closest_marker("attack") else "plain", item.nodeid)

sys.exit(pytest.main(["-p", "no:cacheprovider", "--collect-only", "-q"], plugins=[Listing()]))
"""


@pytest.fixture(scope="module")
def collected(request) -> dict[str, bool]:
    """Every test id of the suite, and whether it is marked attack: from this run's own collection when it
    holds the whole suite (make test's; each xdist worker collects every test), otherwise from a
    collection of its own."""
    if holds_the_whole_suite(request.config):
        return {item.nodeid: item.get_closest_marker("attack") is not None for item in request.session.items}
    result = subprocess.run([sys.executable, "-c", LISTING], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("attack ", "plain "))]
    return {test_id: kind == "attack" for kind, test_id in lines}


def holds_the_whole_suite(config: pytest.Config) -> bool:
    """Whether this run collected every test: started on the test paths (or none, which means them), and
    nothing deselected by -k, -m, --deselect or --last-failed."""
    paths = {(ROOT / path.split("::")[0]).resolve() for path in config.args}
    return (
        paths <= {ROOT.resolve(), (ROOT / "tests").resolve()}
        and not any("::" in path for path in config.args)
        and not config.option.keyword
        and not config.option.markexpr
        and not config.option.deselect
        and not config.getoption("lf", False)
    )


def test_pytest_m_attack_selects_at_least_as_many_attack_tests_as_there_were(collected):
    selected = [test_id for test_id, attack in collected.items() if attack]
    assert len(selected) >= ATTACK_TESTS, f"{len(selected)} attack tests, expected at least {ATTACK_TESTS}"


def test_every_test_in_an_attacks_module_is_marked_attack(collected):
    in_attack_modules = {
        test_id: attack
        for test_id, attack in collected.items()
        if fnmatch.fnmatch(PurePosixPath(test_id.split("::")[0]).name, "test_*_attacks.py")
    }
    assert in_attack_modules
    assert [test_id for test_id, attack in in_attack_modules.items() if not attack] == []
