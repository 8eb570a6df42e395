"""``python -m ghalistener``, and the ``ghalistener`` console script."""

from ersctl.platform.interrupt import interrupt_ends_start_up


def main() -> None:
    """Run the command line (a Ctrl-C during start-up ends with one line, no traceback)."""
    interrupt_ends_start_up("ghalistener")
    # Imported after the handler is installed: click and the platform take a while to load.
    from ersctl.platform.cli import launch

    launch("ghalistener", "ghalistener.cli:main")


if __name__ == "__main__":
    main()
