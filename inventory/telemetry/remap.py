"""Row remapping (A100 and later): what DCGM's two row-remap gauges mean, and which readings of them are events.

When an HBM row keeps failing, the GPU remaps it to a spare row. DCGM publishes two 0/1 gauges for it:

- ``DCGM_FI_DEV_ROW_REMAP_FAILURE``: a remap failed (no spare row left in the bank). The memory cannot be
  repaired any more: NVIDIA's guidance is to replace the GPU (RMA). It opens a fault ticket
  (``support.faults``) and marks the GPU "row remap failed" until it reads 0 again;
- ``DCGM_FI_DEV_ROW_REMAP_PENDING``: a remap is waiting to be applied. It takes effect only when the GPU is
  reset: drain its node and reset the GPU (or reboot). Until then the GPU shows "row remap pending".

Like the XID gauge (``xid.py``) they hold their value, so an *event* is a gauge turning to 1, counted once however
long it stays there (``xid.events`` does the reading for both: 0 → 1 is an event, 1 → 1 none, 1 → 0 → 1 a second
one). ``health.save_remap_events`` stores them as ``HealthEvent`` rows, shown on the GPU page with their meaning.
"""

from . import dcgm

FAILURE, PENDING = "row_remap_failure", "row_remap_pending"
# Health event kind → the series whose turning to 1 it is.
GAUGES = {FAILURE: dcgm.ROW_REMAP_FAILURE, PENDING: dcgm.ROW_REMAP_PENDING}

MEANINGS = {
    FAILURE: "Row remapping failed: a memory row with uncorrectable errors could not be remapped to a spare. "
             "The GPU must be replaced (NVIDIA's guidance: RMA).",
    PENDING: "A row remap is pending: it takes effect at the next GPU reset. Drain the node, then reset the GPU "
             "(or reboot).",
}
# What the GPU's badge says while the gauge reads 1: (text, severity, title).
BADGES = {
    FAILURE: ("row remap failed", "bad", "DCGM reports a failed row remap: replace the GPU (RMA)"),
    PENDING: ("row remap pending", "warn", "DCGM reports a pending row remap: the GPU needs a reset"),
}


def meaning(kind):
    return MEANINGS.get(kind, "")
