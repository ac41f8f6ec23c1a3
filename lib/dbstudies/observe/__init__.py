"""A server's process, observed and controlled while a step runs: what the operating system
counts (`counters`), 1 Hz status samples and per-transaction costs (`probes`), on-CPU profiles
(`profiler`) and their flame graphs (`flamegraph`: SVG text, no plotting library),
instructions counted under valgrind (`callgrind`), and the positive control's pauses
(`pauses`).
"""
