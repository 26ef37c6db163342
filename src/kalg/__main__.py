"""`python -m kalg` runs the command-line interface."""

import sys

from kalg.cli import main

sys.exit(main())
