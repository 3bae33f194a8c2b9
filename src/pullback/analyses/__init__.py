"""Analyses over the normal form.  Each returns its result; none writes on
the tree."""
