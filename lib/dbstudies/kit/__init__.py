"""What a study is and is built from: the contract (`contract`: `Study`, its hooks, `Answer`),
the kit a study imports as `S` (`studykit`, `arms`, `thread_handling`), and the registry that
finds and loads studies (`study`).
"""
