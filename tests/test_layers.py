"""Imports go down only: lifecycle > tokens > accounts > platform_events, and product code never
imports the tests (import-linter's contracts in pyproject.toml; `make lint` runs them too)."""

import subprocess
import sys
from pathlib import Path

from tests.support import ROOT


def test_the_import_contracts_are_kept():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout
