"""The end-to-end simulation: the README's first Quickstart command (not built yet)."""

import sys

if __name__ == "__main__":
    sys.exit("examples/simulate.py: the end-to-end simulation is not built yet")
