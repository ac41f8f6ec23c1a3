"""The studies: one module each (parameters, arms, cells, analysis), one notebook each
(notebooks/<name>.ipynb) that narrates and calls into it. The registry is
`dbstudies.study.REGISTRY`; `dbstudies.study.load(name)` imports a study on first use."""
