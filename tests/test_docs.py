"""What the docs and the code's comments cite exists: a renamed file, command or heading fails here.

The citations read, in README.md, docs/*.md, and the comments and docstrings of the code (Python,
the Makefile, the Procfiles, pyproject.toml, .ci/run, the templates' comments):

- a repository path: a word starting with one of the repository's top folders (`lifecycle/`,
  `docs/`, `tests/`, ...). Ending in `/` it names a folder, with an extension a file; otherwise it
  is the start of a file's name (`accounts/sql/0012` for `accounts/sql/0012_substring_search.sql`).
  A placeholder (`<app>`, `{node}`, `NNNN`, `*`) ends the path where it starts. Paths made at run
  time (`.local/`, `.env`, `.venv/`) are exempt;
- a command: `manage.py <command>` in backticks, after `python`, or with an underscore in its name
  (the project's or an installed app's), and `python -m <module>`;
- a section: `docs/<chapter>.md, "Heading"` (more of them: `, "A", "B"` or `"A" and "B"`), or
  `README, "Heading"`: the file has a heading with exactly that text;
- in Markdown, a link `[text](path#anchor)`: the path exists and the anchor is one of its headings'.

Released SQL files (`<app>/sql/*.sql`) are not read: they are frozen (docs/schema-changes.md).
"""

import ast
import importlib.util
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from django.core.management import get_commands

from tests.support import ROOT

TOP_FOLDERS = (".ci", "accounts", "bench", "docs", "lifecycle", "platform_events", "templates", "tests", "tokens")
# Made at run time (by make run, make test, pip): named in the docs, never in the repository, so no
# path is read under them.
RUNTIME_PATHS = (".local/", ".env", ".venv/")
PLACEHOLDER = re.compile(r"NNNN")

PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(f) for f in TOP_FOLDERS) + r")/[\w./-]*)")
# `manage.py cleanup`, python manage.py cleanup, manage.py add_node: in prose, "manage.py typed by hand" is no command.
MANAGE_COMMAND = re.compile(r"(`|python3?\s+)?manage\.py\s+([a-z][a-z0-9_]*)\b")
PYTHON_MODULE = re.compile(r"python3?\s+-m\s+([A-Za-z_][\w.]*\w)")
SECTION = re.compile(r'(docs/[\w-]+\.md|README(?:\.md)?)((?:,?\s+(?:and\s+)?"[^"\n]+")+)')
QUOTED = re.compile(r'"([^"\n]+)"')
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
CODE_BLOCK = re.compile(r"^```.*?^```", re.M | re.S)

MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_files() -> list[Path]:
    """The code whose comments and docstrings are read."""
    python = [
        path
        for folder in TOP_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
    ]
    templates = sorted((ROOT / "templates").rglob("*.html")) + sorted((ROOT / "templates").rglob("*.txt"))
    others = [
        ROOT / name for name in ("Makefile", "Procfile", "Procfile.dev", "pyproject.toml", ".ci/run", "manage.py")
    ]
    this = Path(__file__).resolve()  # its docstring shows the syntax with made-up names
    return [path for path in python if path.resolve() != this] + templates + [path for path in others if path.exists()]


def comments_of(path: Path) -> str:
    """A file's comments and docstrings, a comment's consecutive lines joined as one paragraph."""
    text = path.read_text()
    if path.suffix == ".py":
        return python_comments(text)
    if path.suffix in {".html", ".txt"}:
        found = re.findall(r"\{#(.*?)#\}|\{% comment %\}(.*?)\{% endcomment %\}", text, re.S)
        return "\n\n".join(short or long for short, long in found)
    return "\n".join(m.group(1) for m in re.finditer(r"(?:^|\s)#(.*)$", text, re.M))


def python_comments(source: str) -> str:
    parts = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                parts.append(docstring)
    comment, last_row = [], None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        if last_row is not None and token.start[0] != last_row + 1:
            parts.append(" ".join(comment))
            comment = []
        comment.append(token.string.lstrip("#").strip())
        last_row = token.start[0]
    if comment:
        parts.append(" ".join(comment))
    return "\n\n".join(parts)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def headings(path: Path) -> tuple[str, ...]:
    text = CODE_BLOCK.sub("", path.read_text())
    return tuple(m.group(1).replace("`", "") for m in HEADING.finditer(text))


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(path):
        base = slug(heading)
        count = seen.get(base, 0)
        result.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return frozenset(result)


@cache
def commands() -> frozenset[str]:
    return frozenset(get_commands())


def path_problem(cited: str) -> str | None:
    """Why a cited repository path does not exist, or None when it does."""
    segments = cited.rstrip(".,;:").split("/")
    for index, segment in enumerate(segments):
        if PLACEHOLDER.search(segment):  # `<app>/sql/NNNN_what.sql`: the path ends before the placeholder
            segments = segments[:index] + [""]
            break
    cited = "/".join(segments)
    target = ROOT / cited
    if cited.endswith("/"):
        return None if target.is_dir() else f"no folder {cited}"
    if re.search(r"\.\w+$", segments[-1]):
        return None if target.exists() else f"no file {cited}"
    if target.exists() or (target.parent.is_dir() and any(target.parent.glob(segments[-1] + "*"))):
        return None
    return f"no file or folder starts {cited}"


def module_problem(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] in TOP_FOLDERS:
        base = ROOT.joinpath(*parts)
        found = (
            base.with_suffix(".py").is_file() or (base / "__init__.py").is_file() or (base / "__main__.py").is_file()
        )
        return None if found else f"no module {module}"
    return None if importlib.util.find_spec(parts[0]) else f"no module {module}"


def section_problems(text: str) -> list[str]:
    problems = []
    for m in SECTION.finditer(re.sub(r"\s+", " ", text)):
        cited_file, quoted = m.group(1), m.group(2)
        path = ROOT / ("README.md" if cited_file.startswith("README") else cited_file)
        if not path.is_file():  # the path's own check says so
            continue
        for section in QUOTED.findall(quoted):
            if section not in headings(path):
                problems.append(f'{cited_file} has no section "{section}"')
    return problems


def link_problems(text: str, here: Path) -> list[str]:
    problems = []
    for target in LINK.findall(CODE_BLOCK.sub("", text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        path = (here.parent / file_part).resolve() if file_part else here
        if not path.exists():
            problems.append(f"link to a missing {target}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            problems.append(f"link to a missing heading {target}")
    return problems


def problems_in(text: str, *, markdown_file: Path | None = None) -> list[str]:
    """Every citation in ``text`` that names nothing."""
    problems = []
    for m in PATH.finditer(text):
        if problem := path_problem(m.group(1)):
            problems.append(problem)
    problems += [
        f"no command manage.py {name}"
        for quoted, name in MANAGE_COMMAND.findall(text)
        if (quoted or "_" in name) and name not in commands()
    ]
    problems += [p for module in PYTHON_MODULE.findall(text) if (p := module_problem(module))]
    problems += section_problems(text)
    if markdown_file is not None:
        problems += link_problems(text, markdown_file)
    return problems


def test_the_readme_is_a_map_of_at_most_200_lines():
    """The README stays a map: what it is, two commands, the tour, the links; the chapters hold the rest."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines"


def test_the_docs_cite_no_tracker_issue_or_seed():
    """A reader cannot open an issue tracker or the design seeds: the docs say things in their own words."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in MARKDOWN
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bissue \d+|\bseed 00\d", line, re.I)
    ]
    assert not found, "\n".join(found)


def test_every_path_command_section_and_link_in_the_docs_exists():
    """README.md and docs/*.md name only files, commands, modules and headings that exist."""
    found = [
        f"{path.relative_to(ROOT)}: {problem}"
        for path in MARKDOWN
        for problem in problems_in(path.read_text(), markdown_file=path)
    ]
    assert not found, "\n".join(found)


def test_every_path_command_and_section_the_code_cites_exists():
    """Comments and docstrings name only files, commands, modules and docs sections that exist."""
    found = [
        f"{path.relative_to(ROOT)}: {problem}" for path in code_files() for problem in problems_in(comments_of(path))
    ]
    assert not found, "\n".join(found)


def test_the_code_cites_docs_chapters_not_old_readme_sections():
    """A README section is cited only if the README has it; chapters live in docs/."""
    found = [
        f"{path.relative_to(ROOT)}: {problem}"
        for path in code_files()
        for problem in section_problems(comments_of(path))
        if "README" in problem
    ]
    assert not found, "\n".join(found)


def test_a_renamed_file_or_folder_is_caught():
    """A path that names no file, no folder, or no file's beginning is reported."""
    assert problems_in("see `lifecycle/ops/health.py`, `tokens/mailroom/`, accounts/sql/0012") == []
    assert problems_in("see `lifecycle/ops/healthz.py`") == ["no file lifecycle/ops/healthz.py"]
    assert problems_in("see tokens/mailbox/") == ["no folder tokens/mailbox/"]
    assert problems_in("see accounts/sql/0999") == ["no file or folder starts accounts/sql/0999"]


def test_placeholders_and_run_time_paths_are_not_paths():
    """`<app>`, `NNNN` and the folders make run and pip create are not checked."""
    assert problems_in("`<app>/sql/NNNN_what.sql`, `tests/<app>/test_<module>.py`, `accounts/sql/NNNN_x.sql`") == []
    assert problems_in("`.local/pgdata`, `.env`, `.venv/bin/python`") == []
    assert not any(folder + "/" in RUNTIME_PATHS or folder in RUNTIME_PATHS for folder in TOP_FOLDERS)


def test_a_missing_command_or_module_is_caught():
    """A manage.py command or a python -m module that does not exist is reported; English after manage.py is not."""
    assert problems_in("`manage.py cleanup`, `python -m lifecycle.ops.embedded_db`") == []
    assert problems_in("`manage.py sweep_everything`") == ["no command manage.py sweep_everything"]
    assert problems_in("python manage.py sweep") == ["no command manage.py sweep"]
    assert problems_in("so that manage.py typed by hand works") == []
    assert problems_in("`python -m lifecycle.ops.no_such_module`") == ["no module lifecycle.ops.no_such_module"]


def test_a_renamed_heading_is_caught():
    """A cited section must be a heading of the cited chapter, also when the citation wraps."""
    assert problems_in('(docs/security.md, "The database roles")') == []
    assert problems_in('(docs/security.md, "The database roles" and "SSRF guard")') == [
        'docs/security.md has no section "SSRF guard"'
    ]
    assert problems_in('(docs/events.md,\n "SSRF guard", "Delivery")') == []
    assert problems_in('(docs/nowhere.md, "X")') == ["no file docs/nowhere.md"]


def test_a_link_to_a_missing_file_or_heading_is_caught():
    """A Markdown link's file must exist and its anchor be one of the file's headings; web links are not read."""
    here = ROOT / "docs" / "events.md"
    assert problems_in("[guard](#ssrf-guard), [roles](security.md#the-database-roles)", markdown_file=here) == []
    assert problems_in("[guard](#ssrf-guards)", markdown_file=here) == ["link to a missing heading #ssrf-guards"]
    assert problems_in("[x](secrets.md)", markdown_file=here) == ["link to a missing secrets.md"]
    assert problems_in("[x](https://example.com/#nothing)", markdown_file=here) == []
