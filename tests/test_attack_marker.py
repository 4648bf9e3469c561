"""The attack tests live beside the tests of what they attack, in modules named ``test_<module>_attacks.py``
and marked ``attack``: `pytest -m attack` runs them all."""

import subprocess
import sys

from tests.support import ROOT

# At least this many attack tests (parametrized cases counted): lower it only when one is removed on purpose.
ATTACK_TESTS = 362


def collected(*args: str) -> list[str]:
    """The test ids `pytest --collect-only` lists for ``args``."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode in (0, 5), result.stdout + result.stderr  # 5: nothing collected
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_pytest_m_attack_selects_at_least_as_many_attack_tests_as_there_were():
    selected = collected("-m", "attack")
    assert len(selected) >= ATTACK_TESTS, f"{len(selected)} attack tests, expected at least {ATTACK_TESTS}"


def test_every_test_in_an_attacks_module_is_marked_attack():
    modules = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*_attacks.py"))
    assert modules
    assert collected("-m", "not attack", *modules) == []
