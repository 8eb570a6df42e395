"""``python -m ghalistener``, and the ``ghalistener`` console script."""

from ersctl.platform.cli import launch


def main() -> None:
    """Run the command line (a Ctrl-C during start-up ends with one line, no traceback)."""
    launch("ghalistener", "ghalistener.cli:main")


if __name__ == "__main__":
    main()
