"""API rate limits: ``API_RATE_LIMIT`` requests per user, counted per API token when the request came with one
(an integration's token does not eat its owner's browser budget), in the cache (``CACHE_URL``: one shared count
for every web process). Over the limit the API answers 429 with ``Retry-After`` (DRF's ``Throttled``).

The count is atomic, so concurrent requests cannot slip past it (DRF's throttle reads a list of timestamps,
appends and writes it back: requests that read the same list all pass). A sliding window made of two fixed ones:
each window of ``duration`` seconds has a counter (cache ``add`` then ``incr``, both atomic in locmem and Redis,
expiring after two windows); a request is allowed when its place in the current window plus the previous
window's count, weighted by how much of it still lies inside the last ``duration`` seconds, stays within the
limit. A refused request takes its place back (``decr``), so the counters hold allowed requests only."""

import math

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from portal.models import APIToken


class PortalRateThrottle(SimpleRateThrottle):
    scope = "api"

    def get_rate(self):
        # Read on every request (not once at import, as DRF's throttles do), so that a setting change applies.
        return settings.API_RATE_LIMIT or None

    def get_cache_key(self, request, view):
        if isinstance(request.auth, APIToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"address-{self.get_ident(request)}"
        return f"throttle-{self.scope}-{ident}"

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        window, into = divmod(self.now, self.duration)
        self.window_key = f"{self.key}-{int(window)}"
        self.previous = self.cache.get(f"{self.key}-{int(window) - 1}", 0)
        self.weight = 1 - into / self.duration  # the share of the previous window still inside the sliding one
        self.place = self.count_in()
        if self.place + self.previous * self.weight <= self.num_requests:
            return True
        self.give_back()
        return False

    def count_in(self):
        """This request's place in the current window's counter (1 for the first)."""
        for _ in range(3):
            if self.cache.add(self.window_key, 1, timeout=2 * self.duration + 1):
                return 1
            try:
                return self.cache.incr(self.window_key)
            except ValueError:  # expired between add and incr: add again
                continue
        return self.num_requests + 1  # the cache keeps losing the key: refuse rather than count nothing

    def give_back(self):
        try:
            self.cache.decr(self.window_key)
        except ValueError:
            pass

    def wait(self):
        """Seconds until a request would be allowed again (at least 1): when the previous window's weighted count
        has fallen far enough, or else in the next window, where this one's count is the previous one."""
        into = self.now % self.duration
        allowed = self.place - 1  # the requests this window had allowed before this one
        room = self.num_requests - 1 - allowed  # what the previous window's weighted count may still be
        if self.previous and 0 <= room < self.previous:
            return max(1, math.ceil(self.duration * (1 - room / self.previous) - into))
        if room >= 0:
            return 1
        # The next window: its previous count is ``allowed``, weighted down from 1 at its start.
        spare = self.num_requests - 1
        after = self.duration * (1 - spare / allowed) if allowed else 0
        return max(1, math.ceil(self.duration - into + after))
