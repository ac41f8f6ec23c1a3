"""What works over runs: executing a study's notebook (`runner`), planning from past noise
(`planner`), sweeps and the distributed mode (`sweep`, `cluster`), build series, history and
bisection (`series`, `history`, `bisection`), replication and sharing (`sharing`), and the
READMEs generated from the studies (`generated`).
"""
