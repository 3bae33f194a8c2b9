"""Test-wide settings: pullback's on-disk cache goes to a temporary directory
(never the user's own), removed when the session ends."""
import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="pullback-test-cache-")
os.environ["PULLBACK_CACHE_DIR"] = _CACHE


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)
