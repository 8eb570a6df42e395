"""``python -m ersctl``, and the ``ersctl`` console script."""

from ersctl.platform.interrupt import interrupt_ends_start_up


def main() -> None:
    """Run the command line (a Ctrl-C during start-up ends with one line, no traceback)."""
    interrupt_ends_start_up("ersctl")
    # Imported after the handler is installed: click and the platform take a while to load.
    from ersctl.platform.cli import launch

    launch("ersctl", "ersctl.cli:main")


def manager() -> None:
    """The ``ersctl-manager`` console script (the image's ``/manager``): ARC's controller
    command line, run as ``ersctl reconcile`` (``ersctl.arc.manager``)."""
    interrupt_ends_start_up("ersctl")
    from ersctl.arc.manager import main as run

    run()


if __name__ == "__main__":
    main()
