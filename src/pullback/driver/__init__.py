"""The driver: transforms made at run time and ahead of time, their caches and the command line."""
