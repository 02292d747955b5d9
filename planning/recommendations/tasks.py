"""The daily expansion-recommendation analysis (Celery; beat schedules it)."""

import logging

from celery import shared_task

from . import store

log = logging.getLogger(__name__)


# The name keeps the module path of before the split of planning: beat and queued messages use it.
@shared_task(name="planning.tasks.analyse_recommendations")
def analyse_recommendations():
    """Daily: run the expansion-recommendation analysis (``store.run``): new findings become
    open recommendations, open ones are updated in place, ones no longer found are resolved. Returns the counts."""
    counts = store.run()
    log.info("Recommendations: %(created)d new, %(updated)d updated, %(resolved)d resolved, %(skipped)d skipped",
             counts)
    return counts
