"""What a reader checks in a rendered report: numbers said once and readable
(`number_problems`), words a reader of the page can follow (`reader_problems`), options the
report names that the run did not use (`unused_option_problems`), all of them at once
(`report_problems`), and the page as Chromium shows it (`read_in_chromium`: offline, its
widest table, a screenshot)."""
from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

NUMBER = r"(?<![\w.,-])[-−+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.,]?\w)"


def number_problems(text: str) -> list[str]:
    """Numbers that mean nothing to a reader, in a report's visible text: `nan` or `inf`,
    e-notation, more than 7 significant digits (IDs glued to letters, dates and versions
    are not numbers here).

    >>> number_problems("p = 1.1e-12; nan %; 91,728.612284 QPS; 11,534,336 B; 1,000,000 rows; run 20261125T2146Z-1369e3; 10.11.19; 137,592.9")
    ["e-notation '1.1e-12'", "says 'nan'", "more than 7 significant digits '91,728.612284'", "more than 7 significant digits '11,534,336'"]

    A hash named as one is an identifier, whatever its digits (a commit 91736386e492 failed
    every smoke report of a CI run as e-notation):

    >>> number_problems("dbstudies commit 91736386e492; sha256 12345678901e; 2e+06 rows")
    ["e-notation '2e+06'"]
    """
    out = []
    text = re.sub(r"\b(commit|sha256) [0-9a-f]{7,64}\b", r"\1 <hash>", text)
    for m in re.finditer(NUMBER, text):
        token = m.group(0)
        if re.search(r"[eE]", token):
            out.append(f"e-notation {token!r}")
            continue
        digits = re.sub(r"\D", "", token.split(".")[0]).lstrip("0")
        frac = token.split(".")[1] if "." in token else ""
        sig = (digits + frac).lstrip("0") if digits else frac.lstrip("0")
        if not frac:
            sig = sig.rstrip("0")
        if len(sig) > 7:
            out.append(f"more than 7 significant digits {token!r}")
    bad_words = sorted(set(re.findall(r"(?<![\w-])(nan|NaN|inf|-inf)(?![\w-])", text)))
    out[1:1] = [f"says {w!r}" for w in bad_words]
    return out


FILE_ENDINGS = r"json|cnf|html|lua|ipynb|toml|ya?ml|txt|py|sql|svg|png|parquet|tbl|csv|mjs|js|log|sys|so|ibd"


def reader_problems(text: str, body: str) -> list[str]:
    """What a report says that a second reader would quote wrongly (issue 43): the factor the
    arms vary listed again as a setting that still differs; a "peak" that does not say it is
    of the thread counts measured; a code name (a dotted Python name) in prose."""
    out = []
    flat = re.sub(r"\s+", " ", text)
    varied = re.search(r"differ in what the study varies — (.*?) —", flat)
    still = re.search(r"still differs? \(the verdicts include[^)]*\): (.*?)(?:\.\s|\.?$)", flat)
    if varied and still:
        names = re.findall(r"(\w+) \(", varied.group(1))
        out += [f"the varied factor {n} listed as a difference" for n in names if re.search(rf"\b{n}\b", still.group(1))]
    out += [f"the varied factor listed as a difference: {m!r}" for m in re.findall(r"\w+ (?:is|are) what the arms vary\)", text)]
    out += [f"a peak without its grid: {m.strip()!r}" for m in re.findall(r"[^.]*\bpeak median\b[^.]*", text)]
    if re.search(r"\bnot a bound\b", flat) and re.search(r"\d+ \((?:≥|<)\)", flat):
        out.append("says the capacity is not a bound beside rounds that gave only a bound")
    out += ["a reason about p99 given for another percentile's rows" for _ in re.findall(r"where p99 amplifies", flat)][:1]
    prose = re.sub(r"<(table|pre|details)\b.*?</\1>", "", body, flags=re.S)
    out += [f"a code name in prose: {m}" for m in sorted(set(re.findall(r"<code>([A-Za-z_]\w*\.[A-Za-z_][\w.]*)</code>", prose)))
            if not re.search(rf"\.(?:{FILE_ENDINGS})$", m)]
    return out


def unused_option_problems(html: str, parameters: dict) -> list[str]:
    """Descriptions of an option the run did not use: the A/A twin, the blocks design."""
    text = html_lib.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|svg)\b.*?</\1>", "", html, flags=re.S)))
    out = []
    if not parameters.get("aa_control") and re.search(r"aa_control\s*=\s*True", text):
        out.append("describes aa_control = True, which the run did not use")
    if parameters.get("design", "paired") != "blocks" and re.search(r"design\s*=\s*.?blocks", text):
        out.append("describes design = \"blocks\", which the run did not use")
    if parameters.get("design") == "blocks" and "(paired design)" in text:
        out.append("describes the paired design in a blocks run")
    return out


def report_problems(html: str) -> list[str]:
    """What a reader must never meet in a report: exception text, papermill's banners, a
    heading with nothing under it, a path of this machine, a number that means nothing
    (`number_problems`), words a second reader would quote wrongly (`reader_problems`) — and a
    page that fetches anything from the network or has a script that could (a script, style,
    image or font: a report is read offline)."""
    body = html.split("<body", 1)[-1]
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|svg)\b.*?</\1>", "", body, flags=re.S))
    text = html_lib.unescape(text)
    problems = [f"says {w!r}" for w in ("Traceback", "Exception", "papermill", "Error:", "KeyError")
                if w in text]
    problems += number_problems(text)
    problems += [f"machine path {m!r}" for m in sorted(set(re.findall(r"(?:/tmp|/work|/home|/root)/[\w./-]*", text)))]
    problems += [f"fetches {u}" for u in sorted(set(re.findall(
        r"""(?:\b(?:src|href)\s*=\s*["']?|url\(\s*["']?|@import\s+["'])(https?://[^"')\s>]+)""", html)))]
    problems += [f"a script that could fetch {u}" for script in re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S)
                 for u in sorted(set(re.findall(r"https?://[^\s\"'`)]+", script)))]
    problems += reader_problems(text, body)
    parts = re.split(r"(<h[1-6][^>]*>.*?</h[1-6]>)", body, flags=re.S)
    for i in range(1, len(parts), 2):
        level = int(parts[i][2])
        under = ""
        for j in range(i + 1, len(parts)):
            if j % 2 and int(parts[j][2]) <= level:
                break
            under += parts[j]
        if not re.sub(r"<[^>]+>|\s|¶", "", under) and "<img" not in under and "<svg" not in under:
            problems.append("empty section " + re.sub(r"<[^>]+>|¶", "", parts[i]).strip())
    return problems


def read_in_chromium(page_path: Path, shot: Path | None = None, width: int = 1300) -> dict:
    """A report as a reader opens it: the system Chromium (Playwright, nothing downloaded) at
    `width` px with the network off. Returns the page as the browser built it (`dom`), every
    request it tried beyond the file itself (`requests`: none may leave a report), the
    widest table (`widest`: its width in px and its first header cells), the page's width and
    the answer grid's own width (`grid`: what Run All ends on in JupyterLab, whose notebook column is
    ≈ 870 px); `shot`: a full-page screenshot there."""
    import shutil

    from playwright.sync_api import sync_playwright
    tried: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": width, "height": 1000}, offline=True)
        page = context.new_page()
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:", "about:")) else tried.append(r.url))
        page.goto(page_path.resolve().as_uri(), wait_until="load")
        widest = page.evaluate("""() => Array.from(document.querySelectorAll('table'))
            .filter(t => t.offsetParent !== null || t.closest('details'))
            .map(t => [Math.max(t.scrollWidth, t.getBoundingClientRect().width),
                       Array.from(t.querySelectorAll('th')).slice(0, 3).map(h => h.textContent.trim()).join(' | ')])
            .sort((a, b) => b[0] - a[0])[0] || [0, '']""")
        opened = page.evaluate("""() => { document.querySelectorAll('details').forEach(d => d.open = true);
            return Math.max(0, ...Array.from(document.querySelectorAll('table')).map(t => t.scrollWidth)); }""")
        page_width = page.evaluate("() => document.documentElement.scrollWidth")
        grid = page.evaluate("() => Math.max(0, ...Array.from(document.querySelectorAll('table.dbs-grid')).map(t => t.scrollWidth))")
        if shot is not None:
            page.screenshot(path=str(shot), full_page=True)
        dom = page.content()
        browser.close()
    return {"dom": dom, "requests": tried, "widest": (max(widest[0], opened), widest[1]), "page_width": page_width,
            "grid": grid}


def words_of(html: str) -> int:
    """How many words a piece of a page shows (tags, styles and scripts left out)."""
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|svg)\b.*?</\1>", "", html, flags=re.S))
    return len(html_lib.unescape(text).split())


def opening_problems(html: str, above: int = 250, lead: int = 300) -> list[str]:
    """How a report must open (issue 54): under its title the set-up in one line, then the
    answer at a glance — at most eight lines and the coloured grid — with at most `above`
    words of text above the grid, then the lead comparisons in words (at most `lead` words),
    and only then anything else (the run's facts folded, the narrative, the sections)."""
    body = html.split("<body", 1)[-1]
    if "</h1>" not in body:
        return ["no title"]
    after = body.split("</h1>", 1)[1]
    problems = []
    setup, first, folded = (m.start() if m else -1 for m in (
        re.search(r"class=[\"']dbs-setupline", after), re.search(r"class=[\"']dbs-first", after),
        re.search("The run's facts", after)))
    if not 0 <= setup < first < folded:
        return [f"opens out of order (set-up line at {setup}, answer at {first}, facts at {folded})"]
    opening = after[first:folded]
    grid = opening.find("dbs-grid")  # the browser's DOM and the file quote alike
    if grid < 0:
        return ["no grid in the opening"]
    glance = re.findall(r"<li>", opening[:grid])
    if not 1 <= len(glance) <= 8:  # a line per comparison of the grid (p50 with the judged ones), the short cells, a note
        problems.append(f"{len(glance)} lines at a glance (1 to 8)")
    if words_of(after[:first + grid]) > above:
        problems.append(f"{words_of(after[:first + grid])} words above the grid (at most {above})")
    table_end = opening.find("</table>", grid)
    if words_of(opening[opening.find("</p>", table_end):]) > lead:
        problems.append(f"{words_of(opening[opening.find('</p>', table_end):])} words of lead prose (at most {lead})")
    if "background:" not in opening[grid:table_end]:
        problems.append("a grid without colours")
    return problems
