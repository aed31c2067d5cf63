"""CLI command modules; each defines `register(main)`. Order is the order of `nexus --help`."""

from . import code, daemon, status

COMMAND_MODULES = [daemon, status, code]
