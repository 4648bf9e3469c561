"""Every bench, one after the other, each one's figures written into docs/measurements.md.

    make bench [QUICK=1] [ONLY=admin,api]
    .venv/bin/python -m bench.all [--quick] [--only admin,api] [--doc docs/measurements.md]

Each bench runs as a process of its own (``.venv/bin/python bench/<name>.py`` and its arguments, the
full sizes by default, small ones with ``--quick``); what it prints on stdout is its figures, shown
as it comes and then written into the document between the bench's two markers::

    <!-- make bench: admin -->
    ...
    <!-- /make bench: admin -->

with the commit, the date, the machine's cores and load average and the exact command, so that a
reader can make any figure again. The first run puts the block at the start of the bench's section
(its ``## `` heading); the prose around the blocks is hand-written and stays. A block is written as
soon as its bench ends, so an interrupted run keeps what it measured; a bench that fails gets a
block that says so (its exit status and the end of its stderr), the others still run, and the run
exits non-zero.
"""

import argparse
import datetime
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository on sys.path, as the other benches do
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import ROOT

DOC = ROOT / "docs" / "measurements.md"


@dataclass(frozen=True)
class Bench:
    name: str  # its markers' name, and bench/<name>.py unless ``script`` says otherwise
    section: str  # the document's "## " heading the block goes under
    quick: tuple[str, ...]  # the arguments of QUICK=1, after ``arguments``; the full run gives no more
    script: str = ""  # bench/<script>.py, when one script is run twice with other arguments
    arguments: tuple[str, ...] = ()  # given in both runs

    @property
    def file(self) -> str:
        return f"{self.script or self.name}.py"


BENCHES = (
    Bench("provision", "Provisioning", ("--single", "300", "--bulk", "5000", "--repeat", "1")),
    Bench(
        "kafka",
        "Kafka relay",
        (
            "--events",
            "2000",
            "--repeat",
            "1",
            "--latency-samples",
            "20",
            "--kept",
            "50000",
            "--due",
            "2000",
            "--claims",
            "50",
            "--hot",
            "500",
            "--others",
            "2000",
        ),
    ),
    Bench("api", "Client API figures", ("--quick",)),
    Bench("nodes", "Node assignment figures", ("--accounts", "20000", "--rounds", "1")),
    Bench("mailroom", "Mailroom figures", ("--quick",)),
    # A private Postfix on loopback (skipped, and said, where Debian's postfix package is missing).
    Bench("mailroom-postfix", "Mailroom figures", ("--quick",), script="mailroom", arguments=("--mta", "postfix")),
    Bench("webhooks", "Platform events figures", ("--quick",)),
    Bench("admin", "The back-office at scale", ("--quick",)),
    Bench("public_timing", "Public pages: the same time for a real account and for nobody", ("--requests", "10")),
    Bench("sign_in_timing", "Sign-in: the same time for every refusal", ("--requests", "20")),
    Bench("scim", "SCIM look-ups at a million accounts", ("--accounts", "50000", "--requests", "50")),
    Bench("erasure", "Erasure", ("--accounts", "20000", "--each", "10")),
    Bench("load", "Load", ("--quick",)),
    Bench("soak", "Soak", ("--clients", "4", "--seconds", "20")),
)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- make bench: {name} -->", f"<!-- /make bench: {name} -->"


def place(document: str, bench: Bench, block: str) -> str:
    """The document with ``block`` between the bench's markers: in place of the block there, or, the
    first time, right under the bench's section heading (a missing heading is a ValueError)."""
    begin, end = markers(bench.name)
    marked = f"{begin}\n{block.rstrip()}\n{end}"
    found = re.search(re.escape(begin) + r".*?" + re.escape(end), document, flags=re.DOTALL)
    if found:
        return document[: found.start()] + marked + document[found.end() :]
    heading = re.search(rf"^## {re.escape(bench.section)}\n", document, flags=re.MULTILINE)
    if heading is None:
        raise ValueError(f"docs/measurements.md has no section '## {bench.section}' for bench/{bench.name}.py")
    return document[: heading.end()] + f"\n{marked}\n" + document[heading.end() :]


def commit() -> str:
    """The commit measured, and whether the work tree differed from it (the document itself aside)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown (not a git clone)"
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/measurements.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"`{head.stdout.strip()}`" + (" with uncommitted changes" if changed else "")


def block(
    bench: Bench,
    *,
    quick: bool,
    command: list[str],
    output: str,
    status: int,
    took: float,
    load: tuple[float, float, float],
    errors: str = "",
) -> str:
    started = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=took)
    make = "make bench QUICK=1" if quick else "make bench"
    size = "QUICK=1: small sizes, not the figures of record" if quick else "full size"
    lines = [
        f"Written by `{make} ONLY={bench.name}` ({size}): commit {commit()}, {started:%Y-%m-%d %H:%M} UTC,"
        f" {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start;"
        f" took {took / 60:.1f} min.",
        "",
        "```",
        "$ " + shlex.join(command),
        output.rstrip(),
    ]
    if status != 0:
        lines += [f"(failed: exit status {status}; the end of its stderr follows)", errors.rstrip()]
    lines.append("```")
    return "\n".join(lines)


def run(bench: Bench, *, quick: bool, doc: Path, folder: Path = ROOT / "bench") -> int:
    """Runs one bench (``folder/<script>.py``), its stdout shown as it comes, and writes its block;
    returns its exit status."""
    script = folder / bench.file
    command = [sys.executable, str(script.relative_to(ROOT) if script.is_relative_to(ROOT) else script)]
    command += [*bench.arguments, *(bench.quick if quick else ())]
    shown = [".venv/bin/python", *command[1:]]  # as a reader types it, not this machine's path
    print(f"\n== {bench.name}: {shlex.join(shown[1:])}", flush=True)
    load = os.getloadavg()
    started = time.monotonic()
    output: list[str] = []
    errors: deque[str] = deque(maxlen=30)
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        # stderr (progress) is passed on as it comes by a thread of its own, its end kept for a failure.
        def pass_on() -> None:
            for line in process.stderr:
                errors.append(line)
                sys.stderr.write(line)

        thread = threading.Thread(target=pass_on, daemon=True)
        thread.start()
        for line in process.stdout:
            output.append(line)
            sys.stdout.write(line)
            sys.stdout.flush()
        status = process.wait()
        thread.join()
    took = time.monotonic() - started
    text = block(
        bench,
        quick=quick,
        command=shown,
        output="".join(output),
        status=status,
        took=took,
        load=load,
        errors="".join(errors),
    )
    doc.write_text(place(doc.read_text(), bench, text))
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few minutes in all (QUICK=1)")
    parser.add_argument("--only", default="", help="comma-separated bench names (ONLY=admin,api); default all")
    parser.add_argument("--doc", type=Path, default=DOC, help="the document to write (default docs/measurements.md)")
    args = parser.parse_args(argv)
    names = [name for name in args.only.split(",") if name.strip()]
    known = {bench.name: bench for bench in BENCHES}
    unknown = [name for name in names if name not in known]
    if unknown:
        parser.error(f"no bench named {', '.join(unknown)}; the benches are {', '.join(known)}")
    chosen = [known[name] for name in names] if names else list(BENCHES)
    for bench in chosen:  # every section is there before an hour of measuring starts
        place(args.doc.read_text(), bench, "")
    failed = [bench.name for bench in chosen if run(bench, quick=args.quick, doc=args.doc) != 0]
    if failed:
        print(f"\nfailed: {', '.join(failed)} (their blocks in {args.doc} say how)", file=sys.stderr)
        return 1
    print(f"\nwrote {len(chosen)} bench(es) into {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
