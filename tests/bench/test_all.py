"""bench/all.py (`make bench`): each bench's figures written between its markers under its section,
the prose around them kept, a failure recorded and not fatal to the others."""

import os

import pytest

from bench import all as benches

DOCUMENT = """# Measurements

Intro.

## Provisioning

Hand-written history of provisioning.

## Erasure

Hand-written history of erasure.
"""


def bench(name: str, quick: tuple[str, ...] = ("--small",)) -> benches.Bench:
    return benches.Bench(name, "Erasure", quick)


@pytest.fixture
def doc(tmp_path):
    """A measurements document of two sections, in the test's own folder."""
    written = tmp_path / "measurements.md"
    written.write_text(DOCUMENT)
    return written


def script(folder, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(body)


def test_the_first_block_goes_right_under_the_section_heading_and_the_prose_stays():
    placed = benches.place(DOCUMENT, bench("erasure"), "figures")

    assert placed.endswith(
        "## Erasure\n\n<!-- make bench: erasure -->\nfigures\n<!-- /make bench: erasure -->\n"
        "\nHand-written history of erasure.\n"
    )
    assert "Hand-written history of provisioning." in placed


def test_a_later_run_replaces_the_block_and_nothing_else():
    once = benches.place(DOCUMENT, bench("erasure"), "old figures\nover two lines")
    twice = benches.place(once, bench("erasure"), "new figures")

    assert "old figures" not in twice and "over two lines" not in twice
    assert twice == benches.place(DOCUMENT, bench("erasure"), "new figures")


def test_two_benches_in_one_section_keep_a_block_each():
    placed = benches.place(benches.place(DOCUMENT, bench("erasure"), "one"), bench("other"), "two")
    placed = benches.place(placed, bench("erasure"), "one again")

    assert "one again" in placed and "two" in placed and "\none\n" not in placed


def test_a_section_the_document_lacks_is_said():
    with pytest.raises(ValueError, match="no section '## Nowhere' for bench/lost.py"):
        benches.place(DOCUMENT, benches.Bench("lost", "Nowhere", ()), "figures")


def test_every_bench_has_its_file_and_its_section_in_the_real_document():
    document = benches.DOC.read_text()
    for each in benches.BENCHES:
        assert (benches.ROOT / "bench" / each.file).is_file(), each.name
        benches.place(document, each, "figures")  # raises for a missing section


def test_a_run_writes_the_figures_from_stdout_with_the_command_commit_cores_and_load(tmp_path, doc, capsys):
    script(tmp_path, "erasure", "import sys\nprint('figure 42', sys.argv[1:])\nprint('progress', file=sys.stderr)\n")

    status = benches.run(bench("erasure"), quick=True, doc=doc, folder=tmp_path)

    assert status == 0
    written = doc.read_text()
    block = written.split("<!-- make bench: erasure -->")[1].split("<!-- /make bench: erasure -->")[0]
    assert "figure 42 ['--small']" in block
    assert "progress" not in block  # stderr is shown, not recorded
    assert f"{tmp_path}/erasure.py --small" in block
    assert "make bench QUICK=1 ONLY=erasure" in block and "not the figures of record" in block
    assert f"{os.cpu_count()} cores, load average " in block
    assert "commit `" in block or "not a git clone" in block
    assert "Hand-written history of erasure." in written
    shown = capsys.readouterr()
    assert "figure 42" in shown.out and "progress" in shown.err


def test_a_bench_run_twice_passes_its_own_arguments_in_both_runs(tmp_path, doc):
    script(tmp_path, "mailroom", "import sys\nprint('arguments', sys.argv[1:])\n")
    postfix = benches.Bench(
        "mailroom-postfix", "Erasure", ("--quick",), script="mailroom", arguments=("--mta", "postfix")
    )

    benches.run(postfix, quick=True, doc=doc, folder=tmp_path)
    assert "arguments ['--mta', 'postfix', '--quick']" in doc.read_text()
    benches.run(postfix, quick=False, doc=doc, folder=tmp_path)
    assert (
        "arguments ['--mta', 'postfix']" in doc.read_text()
        and "<!-- make bench: mailroom-postfix -->" in doc.read_text()
    )


def test_a_full_run_passes_no_arguments_and_says_full_size(tmp_path, doc):
    script(tmp_path, "erasure", "import sys\nprint('arguments', sys.argv[1:])\n")

    benches.run(bench("erasure"), quick=False, doc=doc, folder=tmp_path)

    assert "arguments []" in doc.read_text() and "(full size)" in doc.read_text()


def test_a_failing_bench_is_recorded_with_its_status_and_the_end_of_its_stderr(tmp_path, doc):
    script(tmp_path, "erasure", "import sys\nprint('half the figures')\nsys.exit('the broker did not start')\n")

    status = benches.run(bench("erasure"), quick=False, doc=doc, folder=tmp_path)

    assert status == 1
    written = doc.read_text()
    assert "half the figures" in written
    assert "(failed: exit status 1; the end of its stderr follows)\nthe broker did not start" in written


def test_an_unknown_bench_name_is_refused_with_the_names_there_are(capsys):
    with pytest.raises(SystemExit):
        benches.main(["--only", "admin,nonesuch"])

    assert "no bench named nonesuch; the benches are provision," in capsys.readouterr().err


def test_every_quick_option_is_one_its_bench_declares():
    # `make bench QUICK=1` passes these; a bench's option renamed would fail its run an hour in.
    for each in benches.BENCHES:
        source = (benches.ROOT / "bench" / each.file).read_text()
        for option in (argument for argument in (*each.arguments, *each.quick) if argument.startswith("--")):
            assert f'add_argument("{option}"' in source or f'"{option}",' in source, (each.name, option)
