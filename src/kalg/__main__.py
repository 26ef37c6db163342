"""`python -m kalg` runs the command-line interface."""

from kalg.cli import run

run()
