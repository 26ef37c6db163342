"""Subcommands of the `kalg` command line, one module each (`add_parser`, `run`)."""
