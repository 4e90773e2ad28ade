"""`python -m zomboss`: the command line without the console script (the tests start it this way,
from the interpreter that runs them)."""

import sys

from zomboss.app.cli import main

sys.exit(main())
