"""``python -m pullback``: the same command line as ``pullback``."""
import sys

from .driver.cli import main

if __name__ == "__main__":
    sys.exit(main())
