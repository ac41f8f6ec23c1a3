"""What a live notebook kernel needs: the progress panel and one-line errors (`live`), a pass
through a notebook (`passes`), and JupyterLab with the dbstudies kernel (`lab`).
"""
