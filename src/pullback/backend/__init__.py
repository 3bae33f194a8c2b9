"""The back end: generated trees to source, and source to loaded functions."""
