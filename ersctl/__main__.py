"""``python -m ersctl``, and the ``ersctl`` console script."""

from ersctl.platform.interrupt import end_interrupted


def main() -> None:
    """Run the command line (a Ctrl-C during start-up ends with one line, no traceback)."""
    try:
        # Imported here, inside the guard: click and the platform take a while to load.
        from ersctl.platform.cli import launch
    except KeyboardInterrupt:
        end_interrupted("ersctl")
    launch("ersctl", "ersctl.cli:main")


def manager() -> None:
    """The ``ersctl-manager`` console script (the image's ``/manager``): ARC's controller
    command line, run as ``ersctl reconcile`` (``ersctl.arc.manager``)."""
    try:
        from ersctl.arc.manager import main as run
    except KeyboardInterrupt:
        end_interrupted("ersctl")
    run()


if __name__ == "__main__":
    main()
