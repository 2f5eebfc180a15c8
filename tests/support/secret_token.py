"""The secret of the golden programs: ``${env:SECRET_TOKEN}`` in ``tests/fixtures`` is set to
:data:`SECRET` by the tests that compile them, and no output may hold it."""

from __future__ import annotations

SECRET = "s3cr3t-value"
"""The value of the environment variable ``SECRET_TOKEN`` while the golden programs run."""
