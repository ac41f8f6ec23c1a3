import sys

from .commands import main  # `python -m dbstudies`: the console script's `cli.main`, from the commands wing

sys.exit(main())
