"""``python -m ersctl``, and the ``ersctl`` console script."""

from ersctl.platform.cli import launch


def main() -> None:
    """Run the command line (a Ctrl-C during start-up ends with one line, no traceback)."""
    launch("ersctl", "ersctl.cli:main")


if __name__ == "__main__":
    main()
