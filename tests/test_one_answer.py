"""One answer, said one way (issue 66). The two recorded quick thread-pool runs — measured to a
target with three cells left short (tests/fixtures/make_study) and in 16 fixed rounds
(tests/fixtures/quick) — are re-analysed through their notebooks, and every view is read back
as text: the grid, the glance, the verdict table, the words, the conclusion and the design line
of the report, what the terminal prints, the README's quote, `compare` and `pool`. The grid is
the reference: for every metric each other view must find the same word per cell, the same
counts, the same largest effect (of the better and worse cells not short) and the same number
of short cells."""
import html as html_lib
import json
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from conftest import FIXTURES, REPO

from dbstudies.report import render

TARGETED = next((FIXTURES / "make_study" / "thread_pool").iterdir())
FIXED = next((FIXTURES / "quick" / "thread_pool").iterdir())
TAGS = re.compile(r"<[^>]+>")


def text(fragment: str) -> str:
    return html_lib.unescape(TAGS.sub("", fragment)).strip()


def outputs(nb_path):
    """Every text/html and text/markdown output of an executed notebook, in order."""
    nb = json.loads(nb_path.read_text())
    return [("".join(v) if isinstance(v, list) else v)
            for c in nb["cells"] for o in c.get("outputs", []) for k, v in o.get("data", {}).items()
            if k in ("text/html", "text/markdown")]


def rows_of(table_html: str) -> list[list[str]]:
    return [[text(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table_html, re.S)]


def effect_of(entry: str) -> float:
    return float(entry.split(" %")[0].replace("−", "-"))


def read_grid(outs) -> dict:
    """The grid: per comparison, each cell's entry and word; the cells marked short."""
    grid = next(o for o in outs if "dbs-grid" in o and "dbs-glance" not in o)
    head, *body = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)
                   for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", grid.split("</table>")[0], re.S)]
    names = [text(h) for h in head]
    comparisons = names[1:-1]  # threads first, the pairs last; each workload a row of its own above its cells
    cells, short, workload = {}, set(), None
    for tds in body:
        if len(tds) == 1:
            workload = text(tds[0]).removeprefix("workload: ")
            continue
        cell = (workload, int(text(tds[0])))
        if "<b>short</b>" in tds[-1]:
            short.add(cell)
        for name, td in zip(comparisons, tds[1:-1]):
            if not td:
                continue
            parts = td.split("<br>")
            word = text(re.search(r"<small>(.*?)</small>", td).group(1))
            cells.setdefault(name, {})[cell] = (text(" ".join(parts[:-1])) if len(parts) > 2 else text(parts[0]), word)
    return {"cells": cells, "short": short}


def expected(grid: dict) -> dict:
    """What every view must say, from the grid alone: counts, largest (better or worse, not short)."""
    out = {}
    for name, cells in grid["cells"].items():
        decisive = [(abs(effect_of(e)), e) for cell, (e, w) in cells.items()
                    if w in ("better", "worse") and cell not in grid["short"]]
        out[name] = {"counts": Counter(w for _, w in cells.values()),
                     "largest": max(decisive)[1] if decisive else None}
    return out


def counts_of(said: str) -> Counter:
    """'4 worse, 4 inconclusive (could see ±14 %)' → Counter."""
    said = re.sub(r" \([^)]*\)", "", said)
    return Counter({m.group(2): int(m.group(1)) for m in re.finditer(r"(\d+) ([a-z][a-z ]*?)(?=, \d|$)", said)})


def read_glance(lines: list[str]) -> tuple[dict, int]:
    """The glance's lines (Markdown or plain): per comparison its counts and largest; the short cells."""
    found, short = {}, 0
    for line in lines:
        line = line.removeprefix("- ").replace("**", "")
        m = re.match(r"(.+?) \((\d+) cells?\): (.*)$", line)
        s = re.match(r"Short of the target: (\d+) of (\d+) cells", line)
        if s:
            short = int(s.group(1))
        elif m:
            parts = m.group(3).split("; ")
            largest = next((p.removeprefix("largest ").split(" (")[0] for p in parts if p.startswith("largest ")), None)
            found[m.group(1)] = {"counts": counts_of(parts[0]), "largest": largest}
    return found, short


def split_clauses(paragraph: str) -> list[str]:
    """A paragraph's clauses: split at '; ' outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(paragraph):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and paragraph.startswith("; ", i):
            out.append(paragraph[start:i])
            start = i + 2
    return out + [paragraph[start:]]


def words_counts(paragraph: str) -> Counter:
    """A metric's paragraph in words, counted by the word of each clause (not judged left out)."""
    body = paragraph.split(": ", 1)[1].rstrip(".")
    out: Counter = Counter()
    for clause in split_clauses(body):
        clause = re.sub(r"^pool-of-threads ", "", clause)
        n = re.findall(r"\((?:(\d+) of \d+ cells|all (\d+) cells)", clause)
        k = int(next(x for x in n[-1] if x)) if n else 0
        judged = re.search(r"\((better|worse)\)", clause)
        word = (judged.group(1) if judged else "within target" if clause.startswith("within the target's")
                else "same" if clause.startswith("the same within")
                else "inconclusive" if clause.startswith("inconclusive") else None)
        if word:
            out[word] += k
    return out


def analysed(run, tmp_path):
    run_dir = tmp_path / run.name
    shutil.copytree(run, run_dir)
    proc = subprocess.run([sys.executable, "-m", "dbstudies", "report", str(run_dir), "--analyse"],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("one_answer")
    return {name: analysed(run, tmp) for name, run in (("targeted", TARGETED), ("fixed", FIXED))}


def cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "dbstudies", *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


WORDS_OF = {"QPS": "Throughput (QPS)", "p50": "P50 latency", "p95": "P95 latency", "p99": "P99 latency",
            "tail ratio": "Tail ratio (p99 ÷ p50)", "server CPU/txn": "Server CPU per transaction"}


@pytest.mark.notebook
@pytest.mark.parametrize("which", ["targeted", "fixed"])
def test_every_view_of_a_recorded_run_finds_the_same_largest_short_cells_and_words(runs, which):
    run_dir = runs[which]
    outs = outputs(run_dir / "notebook.ipynb")
    grid = read_grid(outs)
    want = expected(grid)
    assert set(want) == set(WORDS_OF) and all(len(c) == 8 for c in grid["cells"].values())
    assert len(grid["short"]) == (3 if which == "targeted" else 0)  # the cells the loop left short (its record)

    # the glance, in the report and as the terminal prints it; the README quotes the targeted run's
    glance_md = next(o for o in outs if o.startswith("- **QPS**"))
    printed = render.terminal_text(render.printed(run_dir / "notebook.ipynb"))
    assert "**" not in printed and "`" not in printed  # plain text: no Markdown marks
    views = {"glance": glance_md.splitlines(),
             "terminal": [x for x in printed.splitlines() if x.startswith("- ")]}
    if which == "targeted":
        readme = (REPO / "README.md").read_text().split("generated by `dbstudies list --write-readme`, not by hand -->")[1]
        quoted = [x.removeprefix(">").removeprefix(" ") for x in readme.split("<!-- end of")[0].splitlines()
                  if x.startswith(">")]
        assert "\n".join(quoted).strip().startswith(printed.split("\n\nA rerun")[0].strip()), "the README quotes what the terminal printed"
        views["README"] = [x for x in quoted if x.startswith("- ")]
    for view, lines in views.items():
        found, short = read_glance(lines)
        assert short == len(grid["short"]), view
        for name, w in want.items():
            assert found[name]["counts"] == w["counts"], (view, name)
            assert found[name]["largest"] == w["largest"], (view, name)

    # the verdict table: a row per table, its counts, short cells and largest
    table = next(o for o in outs if "largest difference" in o and "<table" in o)
    head, *rows = rows_of(table)
    head = head[1:] if len(head) == len(rows[0]) + 1 else head
    by_words = {r[head.index("comparison") + (len(r) - len(head))]: dict(zip(head, r[len(r) - len(head):])) for r in rows}
    for name, w in want.items():
        row = next(v for k, v in by_words.items() if k.lower() == WORDS_OF[name].lower())
        assert Counter({k: int(row[k]) for k in w["counts"]}) == w["counts"], name
        assert sum(int(row[k]) for k in row if k not in ("comparison", "compared", "cells", "short of target",
                                                          "largest difference", "MDE, median cell")) == 8, name
        assert int(row.get("short of target", 0)) == len(grid["short"]), name
        assert (row["largest difference"] == "–") if w["largest"] is None else row["largest difference"].startswith(w["largest"]), name

    # the words: each metric's paragraph counts its cells by the same words
    for name, w in want.items():
        paragraph = next(p for o in outs for p in o.split("\n\n") if p.startswith(f"**{WORDS_OF[name]}** against"))
        assert words_counts(paragraph) == w["counts"] - Counter({"not judged": 99}), name

    # the conclusion: per judged metric its counts and largest; the short cells once
    conclusion = next(o for o in outs if "over 8 comparisons" in o)
    for name, w in want.items():
        if name == "p50":  # shown at a glance, not judged: the conclusion lists the judged ones
            continue
        line = next(x for x in conclusion.splitlines() if x.lower().startswith(f"- {WORDS_OF[name].lower()}, "))
        said = line.split("over 8 comparisons: ", 1)[1]
        assert counts_of(said.split("; ")[0].rstrip(".")) == w["counts"], name
        largest = re.search(r"; largest (.+?) \(", said)
        assert (largest.group(1) if largest else None) == w["largest"], name
    shorts = re.findall(r"Short of the target\*\*: (\d+) of 8 cells", conclusion)
    assert shorts == ([str(len(grid["short"]))] if grid["short"] else [])

    # the design line counts the short cells the loop recorded
    design = text(next(o for o in outs if "<b>Design.</b>" in o))
    assert (f"{len(grid['short'])} cells short of the target" in design) == bool(grid["short"])


@pytest.mark.notebook
def test_compare_and_pool_say_each_runs_word_per_cell_as_its_report_does(runs):
    grids = {k: read_grid(outputs(d / "notebook.ipynb"))["cells"] for k, d in runs.items()}
    judged = {"throughput (QPS)": "QPS", "p95 latency": "p95", "p99 latency": "p99",
              "tail ratio (p99 ÷ p50)": "tail ratio", "server CPU per transaction": "server CPU/txn"}
    row = re.compile(r"^\s*pool-of-threads\s+(\S+)\s+(\d+)\s+")
    out = cli("compare", str(runs["targeted"]), str(runs["fixed"]))
    seen = 0
    for block in out.split("\n\n"):
        head, _, body = block.partition("\n")
        name = judged.get(head.rstrip(":"))
        if name is None:
            continue
        for line in body.splitlines()[1:]:
            m = row.match(line)
            words = re.findall(r"[+-]\d+\.\d+% ([a-z][a-z ]*?)(?=\s+[+-]?\d)", line)
            cell = (m.group(1), int(m.group(2)))
            assert words[:2] == [grids["targeted"][name][cell][1], grids["fixed"][name][cell][1]], (name, cell, line)
            seen += 1
    assert seen >= 35  # every judged cell of both runs but the tails too thin to judge
    out = cli("pool", str(runs["targeted"]), str(runs["fixed"])).strip()
    seen = 0
    for block in out.split("\n\n"):
        head, _, body = block.partition("\n")
        name = judged.get(head.split(" — ")[0])
        if name is None:
            continue
        for line in body.splitlines()[1:]:
            m = row.match(line)
            each = re.search(r"\s(better|worse|draw)\s+(.+?) · (.+?)\s+\d+\.\d+%", line)
            cell = (m.group(1), int(m.group(2)))
            assert [each.group(2), each.group(3)] == [grids["targeted"][name][cell][1], grids["fixed"][name][cell][1]], line
            seen += 1
    assert seen >= 35
