"""`python -m nexus_client.cli_main ...` runs the CLI (what the console scripts call)."""

from .cli import run

if __name__ == "__main__":
    run()
