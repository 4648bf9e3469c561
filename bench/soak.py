"""The soak test's long form (issue 9): tests/soak.py for minutes, with more clients.

    .venv/bin/python bench/soak.py [--clients 8] [--seconds 300] [--json] [--keep-logs]

Prints what it did and counted (requests made and failed, e-mails expected, received, lost and
doubled, audit rows against changes); exit status 0 when every promise held. The README's
"Measured" section has a run's figures.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.soak import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(prog="bench/soak.py", clients=8, seconds=300))
