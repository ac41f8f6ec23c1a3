"""The README, docs/ and each built-in study's README must match the code: their commands,
parameter tables, links and the generated excerpt of what `make study` prints."""
import json
import re
import shlex
import subprocess

import pytest
from conftest import REPO

from dbstudies import cli
from dbstudies.kit import study
from dbstudies.kit.study import load
from dbstudies.measure import checks
from dbstudies.store.params import fields, meanings
from dbstudies.workflows import generated

tp = load("thread_pool")

README = (REPO / "README.md").read_text()
DOCS = sorted((REPO / "docs").glob("*.md"))
STUDY_READMES = list(dict.fromkeys(generated.readme_of(load(n)) for n in study.names()))
PAGES = [REPO / "README.md", *DOCS, *STUDY_READMES]


def test_the_two_commands_and_ci():
    assert re.search(r"^make study\b", README, re.M) and re.search(r"^make test\b", README, re.M)
    ci = [ln for ln in (REPO / ".ci/run").read_text().splitlines()
          if ln.strip() and not ln.startswith(("#", "set ", "cd "))]
    assert ci == ["make test"]
    make = (REPO / "Makefile").read_text()
    for target in ("setup", "study", "test", "check", "lab", "bench"):
        assert re.search(rf"^{target}:", make, re.M), target
    assert re.search(r"^study: setup.*\n\t\$\(VENV\)/bin/dbstudies run thread_pool --profile \$\(PROFILE\)", make, re.M)
    assert re.search(r"^PROFILE \?= quick$", make, re.M)
    assert re.search(r"^test: setup.*\n\t\$\(VENV\)/bin/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=15$", make, re.M)
    assert re.search(r'^check: setup.*\n\t\$\(VENV\)/bin/python -m pytest -q -n 2 --dist loadfile -m "not server and not notebook and not browser"$', make, re.M)


@pytest.mark.parametrize("name", study.names())
def test_the_parameter_tables_are_the_generated_ones(name):
    """Each built-in study's README table is what its parameter class and profiles give
    (`dbstudies list --write-readme` writes them): a parameter added, renamed, given another
    profile value or meaning without its README following fails here."""
    s = load(name)
    text = generated.readme_of(s).read_text()
    assert generated.TABLE[0].format(name=name) in text, f"{name}'s README has no parameter table"
    assert generated.readme_table(text, s) == text, "parameter table drifted: run `dbstudies list --write-readme`"


@pytest.mark.parametrize("name", study.names())
def test_every_parameter_says_what_it_means(name):
    s = load(name)
    words = meanings(s.Params)
    assert [f for f in fields(s.Params) if not words.get(f)] == []
    assert set(words) <= set(fields(s.Params)), "a meaning of no parameter"


def test_a_drifted_table_is_seen():
    """The check itself: a profile value changed in a README is not what the code gives."""
    text = generated.readme_of(tp).read_text()
    changed = text.replace("| `repeats` | 2 | 4 | 6 |", "| `repeats` | 2 | 5 | 6 |", 1)
    assert changed != text and generated.readme_table(changed, tp) == text


def test_cli_examples_are_valid():
    """Every `dbstudies run` line of the README, docs/ and the study READMEs parses and
    resolves (parameters, profile, flavours) as the CLI would, before anything starts."""
    lines = [ln for page in PAGES for ln in page.read_text().splitlines()
             if re.match(r"\.venv/bin/(dbstudies|python -m dbstudies) run ", ln)]
    assert len(lines) >= 10
    for line in lines:
        argv = shlex.split(line.split(" #")[0])
        argv = argv[argv.index("run"):]
        args = cli._parser().parse_args(argv)
        checks.resolve(load(args.study), args.profile, **dict(args.parameter))


def test_every_command_is_declared_once_with_what_it_takes_and_what_it_does(capsys):
    """Each command is one `Command` of one group's module (its arguments, help and what runs,
    side by side; no name twice), the loader stays a loader, and a command reaches what it runs:
    `dbstudies list` prints every built-in study."""
    from dbstudies.commands import Command
    declared = [c for group in cli.GROUPS for c in group.COMMANDS]
    assert len(declared) == len({c.name for c in declared}) == len(cli.COMMANDS) >= 18
    assert all(isinstance(c, Command) and callable(c.run) and c.help for c in declared)
    for loader in ("cli.py", "commands/loader.py"):  # loaders: no command named in them
        text = (REPO / "lib" / "dbstudies" / loader).read_text()
        assert len(text.splitlines()) < 80 and not any(f'"{c.name}"' in text for c in declared), loader
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}: " in out for name in study.names())


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it.

    >>> slug("Where results land"), slug("Sweeps: many runs, here or on several benchmark hosts")
    ('where-results-land', 'sweeps-many-runs-here-or-on-several-benchmark-hosts')
    >>> slug("Workloads: TPC-C-like (`tpcc`) and LinkBench-like (`linkbench`)")
    'workloads-tpc-c-like-tpcc-and-linkbench-like-linkbench'
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_leads_somewhere(page):
    """Every relative link of the README, docs/ and the study READMEs names a file that
    exists, and an anchor a heading of that file."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links or page in STUDY_READMES
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.relative_to(REPO)}: {link} leads nowhere"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(), re.M)
            assert anchor in {slug(h) for h in headings}, f"{page.relative_to(REPO)}: no heading #{anchor} in {path}"


def test_the_readme_is_short_and_opens_with_a_result():
    """≤ 200 lines: what it is, a line per study, the two commands, what `make study` prints
    (generated) and its figure, where results land, links; the rest lives in docs/."""
    lines = README.splitlines()
    assert len(lines) <= 200, len(lines)
    said = README.split(cli_excerpt_markers()[0], 1)[1].split(cli_excerpt_markers()[1], 1)[0]
    # what the terminal printed, plain text quoted: the glance's lines and the lead words, no Markdown marks
    assert said.count("\n> ") >= 8 and "\n> Throughput (QPS) against one-thread-per-connection" in said
    assert "\n> The answer\n>\n> - QPS (8 cells): " in said and "**" not in said.split("\n\nA rerun: ")[0]
    assert "![" in README and (REPO / "docs" / "img" / "qps_vs_threads.png").stat().st_size > 10_000
    for name in study.names():  # every study's README (the faces of one experiment: one, a section each)
        assert f"({generated.readme_of(load(name)).relative_to(REPO)}" in README, name
    for doc in DOCS:
        assert f"(docs/{doc.name})" in README, doc.name


def cli_excerpt_markers() -> tuple[str, str]:
    run = next(p for p in (REPO / generated.EXCERPT_RUN).iterdir() if (p / "metadata.json").exists())
    return tuple(m.format(run=f"{generated.EXCERPT_RUN}/{run.name}") for m in generated.EXCERPT)


def test_what_make_study_prints_is_the_generated_excerpt(tmp_path):
    """The README's quote of what `make study` prints is the recorded quick run's answer and
    conclusion as the code gives them today, and its figure draws what the committed one
    drew (`dbstudies list --write-readme` writes both)."""
    assert generated.with_excerpt(README, tmp_path) == README, "run `dbstudies list --write-readme`"
    drawn = json.loads((tmp_path / "qps_vs_threads.json").read_text())
    assert drawn == json.loads((REPO / "docs" / "img" / "qps_vs_threads.json").read_text())
    assert drawn["problems"] == [] and all(p["series"] == 2 for p in drawn["panels"])


def test_environment_yml_is_fully_pinned_and_read_by_setup():
    env = (REPO / "environment.yml").read_text()
    pins = re.findall(r"^ +- ([A-Za-z0-9_.-]+)==\S+$", env, re.M)
    entries = re.findall(r"^ {6}- (\S+)$", env, re.M)
    assert pins and len(pins) == len(entries), "every pip entry must be pinned with =="
    extracted = subprocess.run(
        ["bash", "-c", "sed -n '/^ *- pip:/,$p' environment.yml | grep -E '^ +- [A-Za-z0-9_.-]+==' "
                       "| sed -E 's/^ +- //'"], cwd=REPO, capture_output=True, text=True, check=True)
    assert extracted.stdout.split() == entries
    setup = (REPO / "env/setup.sh").read_text()
    assert "grep -E '^ +- [A-Za-z0-9_.-]+=='" in setup  # the same extraction as above
    for name in ("papermill", "mysql-connector-python==9.7.0", "pyarrow", "scipy"):
        assert name in env


@pytest.mark.parametrize("flavour", ["mariadb-10.5", "mariadb-10.11", "mariadb-11.8", "mysql-9.7"])
def test_flavours_named_in_the_docs_exist(flavour):
    assert flavour in (REPO / "docs" / "servers.md").read_text()
    assert (REPO / "env/servers" / f"{flavour}.toml").exists()


def test_a_new_study_gets_a_parameters_section_in_its_readme():
    """A built-in study whose README has no table yet (a new one): `--write-readme` gives it a
    Parameters section at the end, to be given its narrative above."""
    lat = load("latency")
    table = generated.parameter_table(lat)
    text = generated.readme_table("# Latency\n\nWhat it asks.\n", lat)
    assert text.startswith("# Latency\n\nWhat it asks.\n\n## Parameters\n") and text.count(table) == 1
    assert generated.readme_table(text, lat) == text
