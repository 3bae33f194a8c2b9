"""``python -m pullback``: the same command line as ``pullback``."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
