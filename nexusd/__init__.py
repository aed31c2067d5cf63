"""NEXUS daemon package. Importing it loads nothing heavy: clients import `nexusd.errors` and `nexusd.protocol`."""

__version__ = "0.1.0"
# Bumped when a frame's shape changes incompatibly; `hello` exchanges it.
WIRE_VERSION = 1
