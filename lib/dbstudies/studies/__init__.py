"""The built-in studies: a package each — `studies/<name>/__init__.py` (parameters, profiles,
arms, cells, hooks, and what the study answers: `answer(run, p)`), its own analysis beside it
where it has one (dbt3_plans/queries.py, compression/storage.py, latency/levels.py) — and a
notebook each (notebooks/<name>.ipynb) that narrates and calls into it.
Nothing lists them: `dbstudies.kit.study.names()` finds every package here, and
`dbstudies.kit.study.load(name)` imports one on first use (or a study of your own by its folder)."""
