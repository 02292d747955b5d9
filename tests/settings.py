"""The test run's settings: the portal's, configured as the demo is (``DEBUG=1``: no secret key needed, static files
from the apps), unless the environment says otherwise. Processes the tests start inherit the same environment; tests
of production settings start ``manage.py`` with an environment of their own (``tests/portal/test_settings.py``)."""

import os

os.environ.setdefault("DEBUG", "1")
# Fuzzing and load tests send thousands of API requests a minute with one token; the rate limit's own tests set
# a low one.
os.environ.setdefault("API_RATE_LIMIT", "")
# The tests' stub servers (and the processes some tests start) listen on loopback, which the outbound policy refuses
# unless allowed; tests of the policy itself set OUTBOUND_ALLOWED_NETWORKS to what they check.
os.environ.setdefault("OUTBOUND_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")

from portal.settings import *  # noqa: E402, F403
