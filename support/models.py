"""Support tickets with SLAs (see the support issue)."""
