"""A report's style sheets without the rules it cannot use: nbconvert's lab template carries
all of JupyterLab's CSS (≈ 250 KB: editors, menus, dialogs, widgets) for a page that shows
Markdown, tables and images. A rule is kept when one of its selectors names only classes
and ids the page has (a selector naming none — elements, :root's variables — is kept);
@media and @supports blocks are pruned inside and dropped when empty; other @-rules stay.
Custom properties (`--jp-…`, ≈ 90 KB of them, icons among them) are kept only where a kept
rule uses them, directly or through another one.

Also what a report page carries besides its content: our own style sheet (`STYLE`) and the
template's head without anything that could fetch (`offline`): a report is read offline."""
from __future__ import annotations

import re

SELECTOR_NAMES = re.compile(r"([.#])(-?[_a-zA-Z][\w-]*)")


def used_names(html: str) -> set[str]:
    """'.class' and '#id' of every element of the page."""
    names = set()
    for value in re.findall(r"""\bclass\s*=\s*["']([^"']*)["']""", html):
        names.update("." + c for c in value.split())
    names.update("#" + i for i in re.findall(r"""\bid\s*=\s*["']([^"']*)["']""", html))
    return names


def _blocks(css: str) -> list[tuple[str, str]]:
    """Top-level (prelude, body) pairs, braces matched; comments dropped."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out, i, n = [], 0, len(css)
    while i < n:
        open_at = css.find("{", i)
        semi = css.find(";", i)
        if semi != -1 and (open_at == -1 or semi < open_at):  # @import/@charset …;
            out.append((css[i:semi + 1].strip(), ""))
            i = semi + 1
            continue
        if open_at == -1:
            break
        depth, j = 1, open_at + 1
        while j < n and depth:
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        out.append((css[i:open_at].strip(), css[open_at + 1:j - 1]))
        i = j
    return out


def _keeps(selectors: str, names: set[str]) -> bool:
    for selector in selectors.split(","):
        wanted = {a + b for a, b in SELECTOR_NAMES.findall(re.sub(r"\[[^\]]*\]|:not\([^)]*\)", "", selector))}
        if wanted <= names:
            return True
    return False


def prune(css: str, names: set[str]) -> str:
    """`css` with only the rules that can apply to a page whose classes and ids are `names`.

    >>> prune(".a { x: 1 } .b .c { y: 2 } p, .z { w: 0 } @media print { .b { v: 1 } } :root { --k: 1 }", {".a"})
    '.a{ x: 1 }\\np, .z{ w: 0 }\\n:root{ --k: 1 }'
    """
    out = []
    for prelude, body in _blocks(css):
        if not body and prelude.endswith(";"):
            out.append(prelude)
        elif prelude.startswith(("@media", "@supports")):
            inner = prune(body, names)
            if inner:
                out.append(f"{prelude}{{{inner}}}")
        elif prelude.startswith("@") or _keeps(prelude, names):
            out.append(f"{prelude}{{{body}}}")
    return "\n".join(out)


DECLARATION = re.compile(r";\s*(?=--[\w-]+\s*:)")  # a custom property starts after it
VAR = re.compile(r"var\(\s*(--[\w-]+)")


def unused_properties(css: str, also: str = "") -> str:
    """`css` without the custom properties that nothing uses (`also`: other CSS of the page).

    >>> unused_properties(":root { --a: 1; --b: var(--c); --c: 2; --d: url(x;y) } p { x: var(--b) }")
    ':root{--b: var(--c);--c: 2}\\np{ x: var(--b)}'
    """
    blocks = _blocks(css)
    split = [(pre, [d for d in DECLARATION.split(body)]) for pre, body in blocks]
    plain = also + "".join(d for _, decls in split for d in decls if not d.strip().startswith("--"))
    used = set(VAR.findall(plain))
    defined = {d.strip().split(":", 1)[0].strip(): d for _, decls in split for d in decls if d.strip().startswith("--")}
    while True:  # a used property may use others
        more = {v for name in used if name in defined for v in VAR.findall(defined[name])} - used
        if not more:
            break
        used |= more
    out = []
    for pre, decls in split:
        kept = [d for d in decls if not d.strip().startswith("--") or d.strip().split(":", 1)[0].strip() in used]
        body = ";".join(kept).rstrip()
        if body.strip() or not any(d.strip() for d in decls):
            out.append(f"{pre}{{{body}}}" if pre and not pre.endswith(";") else pre)
    return "\n".join(out)


def prune_page(page: str, min_size: int = 2000) -> str:
    """Every <style> block of `page` longer than `min_size` characters pruned to what the
    page's elements can use, then to the custom properties the page's rules use."""
    names = used_names(page)
    page = re.sub(r"(<style[^>]*>)(.*?)(</style>)",
                  lambda m: m.group(1) + (prune(m.group(2), names) if len(m.group(2)) > min_size
                                          else m.group(2)) + m.group(3), page, flags=re.S)
    styles = "".join(re.findall(r"<style[^>]*>(.*?)</style>", page, flags=re.S))
    inline = " ".join(re.findall(r"""\bstyle\s*=\s*["']([^"']*)["']""", page))
    return re.sub(r"(<style[^>]*>)(.*?)(</style>)",
                  lambda m: m.group(1) + (unused_properties(m.group(2), styles.replace(m.group(2), "") + inline)
                                          if "--" in m.group(2) and len(m.group(2)) > min_size else m.group(2))
                  + m.group(3), page, flags=re.S)


STYLE = """<style>
.dbs-header { margin: 1em 2em; font-family: sans-serif; font-size: 14px; }
.dbs-header table { border-collapse: collapse; margin: .5em 0; }
.dbs-header th, .dbs-header td { text-align: left; padding: 2px 12px 2px 0; vertical-align: top; }
.dbs-banner { padding: .6em 1em; margin-bottom: .8em; border-radius: 4px; background: #fdecea;
              border-left: 6px solid #c62828; }
table.dbs-table { font-size: 12px; }
table.dbs-table th { white-space: normal; min-width: 3em; vertical-align: bottom; }
table.dbs-table td { white-space: nowrap; padding: 2px 6px; }
table.dbs-config td, table.dbs-config th { padding: 1px 14px 1px 0; text-align: left !important; }
table.dbs-config td { max-width: 36em; overflow-wrap: anywhere; }
table.dbs-table td.dbs-prose { white-space: normal; overflow-wrap: anywhere; min-width: 12em; max-width: 42em; }
tr.dbs-differs td { background: #fff8e1; }
.dbs-flame { overflow-x: auto; max-width: 100%; margin: .3em 0 .8em; }
.dbs-flame svg { max-width: 100%; height: auto; }
.dbs-setup pre { white-space: pre-wrap; font-size: 12px; background: #f6f6f6; padding: 4px 8px; }
.dbs-header summary, details.dbs-details > summary { font-weight: bold; margin: .4em 0; cursor: pointer; }
.dbs-banner.dbs-interrupted, .dbs-banner.dbs-running, .dbs-banner.dbs-abandoned {
              background: #fff4e5; border-left-color: #ef6c00; }
</style>"""


REMOTE_SCRIPT = re.compile(r"<script\b[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>\s*", re.I)
MATHJAX_CONFIG = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->\s*", re.S)


FETCHING_SCRIPT = re.compile(r"<script\b[^>]*>(?:(?!</script>).)*?https?://(?:(?!</script>).)*</script>\s*", re.S | re.I)


def offline(body: str) -> str:
    """The page without what it would fetch: nbconvert's template loads require.js and MathJax
    from a CDN (a report has no widgets and no formulas), and a Mermaid loader that imports
    from one when a diagram is on the page (a report has none): every script that names a
    remote address goes, so nothing on the page could leave it.

    >>> offline('<head><script src="https://cdn.example/require.js"></script><title>t</title>')
    '<head><title>t</title>'
    >>> offline('<script type="module">x = await import("https://cdn.example/m.mjs")</script><p>kept</p>')
    '<p>kept</p>'
    """
    return FETCHING_SCRIPT.sub("", REMOTE_SCRIPT.sub("", MATHJAX_CONFIG.sub("", body)))
