"""Measuring a run: its plan (`schedule`, `checks`), who owns it (`ownership`), the loop
(`loop`: blocks, paired rounds; `experiment`: a measurement's phases), a step's driver
(`steps`), the precision a run reaches (`precision`), and what it records of its servers
(`inventory`).
"""
