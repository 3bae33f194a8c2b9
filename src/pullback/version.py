"""pullback's version (``pullback.__version__``; part of every cache and artifact key)."""
__version__ = "0.1.0"
