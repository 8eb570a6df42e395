"""``python -m ghalistener``, and the ``ghalistener`` console script."""

from ersctl.platform.interrupt import end_interrupted


def main() -> None:
    """Run the command line (a Ctrl-C during start-up ends with one line, no traceback)."""
    try:
        # Imported here, inside the guard: click and the platform take a while to load.
        from ersctl.platform.cli import launch
    except KeyboardInterrupt:
        end_interrupted("ghalistener")
    launch("ghalistener", "ghalistener.cli:main")


if __name__ == "__main__":
    main()
