"""The README's commands and parameter table must match the code."""
import re
import shlex
import subprocess

import pytest
from conftest import REPO

from dbstudies import checks, cli, study
from dbstudies.params import fields, meanings
from dbstudies.study import load
from dbstudies.studykit import title

tp = load("thread_pool")

README = (REPO / "README.md").read_text()


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
    assert re.search(r"^test: setup.*\n\t\$\(VENV\)/bin/python -m pytest --durations=15$", make, re.M)
    assert re.search(r'^check: setup.*\n\t\$\(VENV\)/bin/python -m pytest -q -m "not server and not notebook and not browser"$', make, re.M)


def test_the_parameter_tables_are_the_generated_ones():
    """Each built-in study's README table is what its parameter class and profiles give
    (`dbstudies list --write-readme` writes them): a parameter added, renamed, given another
    profile value or meaning without the README following fails here."""
    for name in study.names():
        assert study.TABLE[0].format(name=name) in README, f"README has no parameter table of {name}"
    assert study.readme_tables(README) == README, "README's parameter tables drifted: run `dbstudies list --write-readme`"


@pytest.mark.parametrize("name", study.names())
def test_every_parameter_says_what_it_means(name):
    s = load(name)
    words = meanings(s.Params)
    assert [f for f in fields(s.Params) if not words.get(f)] == []
    assert set(words) <= set(fields(s.Params)), "a meaning of no parameter"


def test_a_drifted_table_is_seen():
    """The check itself: a profile value changed in the README is not what the code gives."""
    changed = README.replace("| `repeats` | 2 | 16 | 20 |", "| `repeats` | 2 | 15 | 20 |", 1)
    assert changed != README and study.readme_tables(changed) == README


def test_cli_examples_are_valid():
    lines = [ln for ln in README.splitlines() if re.match(r"\.venv/bin/(dbstudies|python -m dbstudies) run ", ln)]
    assert len(lines) >= 2
    for line in lines:
        argv = shlex.split(line.split("#")[0])
        argv = argv[argv.index("run"):]
        args = cli._parser().parse_args(argv)
        checks.resolve(load(args.study), args.profile, **dict(args.parameter))


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
def test_flavours_named_in_readme_exist(flavour):
    assert flavour in README
    assert (REPO / "env/servers" / f"{flavour}.toml").exists()


def test_a_new_study_gets_its_table_where_the_others_are():
    """A built-in study the README does not know yet: `--write-readme` gives it a section of
    its own after the last study's table (the author writes its narrative there)."""
    without = README.replace(study.TABLE[0].format(name="latency"), "<!-- gone -->", 1)
    text = study.readme_tables(without.split("<!-- gone -->", 1)[0]
                               + without.split(study.TABLE[1].format(name="latency"), 1)[1])
    table = study.parameter_table(load("latency"))
    assert text.count(table) == 1 and text.index(table) > text.index(study.TABLE[1].format(name="compression"))
    heading = f"## {title(load('latency'))}: parameters"
    assert heading in text and text.index(heading) < text.index(table)
