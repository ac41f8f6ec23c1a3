"""The run store and what it records: a run directory and its tables (`results`, `tables`,
`schema`), a run's metadata typed (`record`), its parameters (`params`), where it came from
(`provenance`), its servers' settings (`settings`), CPUs (`cpus`), how far it got (`progress`),
its exports and archives (`exports`, `archive`).
"""
