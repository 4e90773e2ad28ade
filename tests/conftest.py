"""Shared test set-up: every test run gets its own KB cache folder."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("ZOMBOSS_CACHE", tempfile.mkdtemp(prefix="zomboss-test-cache-"))
