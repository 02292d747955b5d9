"""Attribution and the lost GPU-hours estimate on plain data (``inventory.goodput.attribution``): no database."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inventory.goodput import attribution as a

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
START, END = T - timedelta(hours=4), T  # a 4-hour job on node 1


def classify(state, faults=(), nodes=(1,)):
    return a.classify(state, START, END, set(nodes), list(faults))


def test_node_fail_is_the_infrastructures():
    found = classify("NODE_FAIL")
    assert (found.cause, found.reason, found.fault) == (a.INFRASTRUCTURE, a.NODE_FAIL, None)


def test_a_job_killed_2_minutes_after_an_xid_79_on_its_node_is_the_infrastructures():
    xid = a.Fault(a.XID_79, END - 2 * MIN, node_id=1, gpu_id=7, xid_event_id=70)
    found = classify("FAILED", [xid])
    assert (found.cause, found.reason, found.fault) == (a.INFRASTRUCTURE, a.XID_79, xid)


def test_out_of_memory_is_the_users_even_after_a_fault():
    found = classify("OUT_OF_MEMORY", [a.Fault(a.XID_79, END - MIN, node_id=1)])
    assert (found.cause, found.reason) == (a.USER, a.OOM)


def test_a_failure_on_a_healthy_node_is_the_users():
    assert (classify("FAILED").cause, classify("FAILED").reason) == (a.USER, a.FAILED)


@pytest.mark.parametrize("fault", [
    a.Fault(a.XID_79, END - 2 * MIN, node_id=2),  # another node's
    a.Fault(a.XID_79, END - 11 * MIN, node_id=1),  # before the 10-minute window
    a.Fault(a.XID_79, END + 6 * MIN, node_id=1),  # after the 5-minute lag
])
def test_faults_elsewhere_or_at_other_times_leave_a_failure_to_the_user(fault):
    assert classify("FAILED", [fault]).cause == a.USER


def test_a_fault_before_the_job_started_is_not_its_cause():
    fault = a.Fault(a.XID_79, END - 6 * MIN, node_id=1)  # inside 10 minutes of the end, but before the start
    assert a.classify("FAILED", END - 4 * MIN, END, {1}, [fault]).cause == a.USER
    assert a.classify("FAILED", END - 7 * MIN, END, {1}, [fault]).cause == a.INFRASTRUCTURE


def test_cancelled_timeout_preempted_requeued_and_completed():
    assert classify("CANCELLED").reason == a.CANCELLED and classify("CANCELLED").cause == a.USER
    assert classify("TIMEOUT").reason == a.TIMEOUT and classify("TIMEOUT").cause == a.USER
    assert classify("PREEMPTED").cause == a.SCHEDULER
    assert (classify("REQUEUED").cause, classify("REQUEUED").reason) == (a.SCHEDULER, a.REQUEUED)
    ecc = a.Fault(a.ECC, END - MIN, node_id=1)
    assert (classify("REQUEUED", [ecc]).cause, classify("REQUEUED", [ecc]).reason) == (a.INFRASTRUCTURE, a.ECC)
    assert classify("COMPLETED") is None and classify("RUNNING") is None
    assert a.classify("FAILED", None, END, {1}, []) is None  # never started


def test_the_most_specific_fault_explains_the_end():
    degraded = a.Fault(a.DEGRADED, END - MIN, node_id=1, transition_id=3)
    ecc_hour = a.Fault(a.ECC_COUNTER, T.replace(minute=0) - timedelta(hours=1), node_id=1,
                       until=T.replace(minute=0))  # the hour before the end: overlaps the window
    xid = a.Fault(a.XID, END - 8 * MIN, node_id=1)
    assert classify("FAILED", [degraded]).reason == a.DEGRADED
    assert classify("FAILED", [degraded, ecc_hour]).reason == a.ECC_COUNTER
    assert classify("FAILED", [degraded, ecc_hour, xid]).reason == a.XID
    assert classify("FAILED", [degraded, a.Fault(a.XID_79, END + MIN, node_id=1)]).reason == a.XID_79


def test_work_since_the_last_checkpoint():
    # 4 h 15 min with a checkpoint every hour: the last at 4 h, 15 min lost, × 8 GPUs = 2 GPU-hours.
    assert a.lost_run_hours(T, T + timedelta(hours=4, minutes=15), 8, timedelta(hours=1)) == 2.0
    # Never reached a checkpoint: the whole 40 minutes; no interval: the whole run.
    assert a.lost_run_hours(T, T + 40 * MIN, 3, timedelta(hours=1)) == 2.0
    assert a.lost_run_hours(T, T + 40 * MIN, 3, None) == 2.0


def test_restart_wait_is_capped_and_unknown_until_the_cap_passes():
    cap = timedelta(hours=24)
    assert a.restart_wait(T, T + timedelta(hours=2), cap, T + timedelta(hours=3)) == timedelta(hours=2)
    assert a.restart_wait(T, T + timedelta(days=7), cap, T + timedelta(days=8)) == cap
    assert a.restart_wait(T, None, cap, T + timedelta(hours=3)) is None
    assert a.restart_wait(T, None, cap, T + timedelta(hours=25)) == cap


def test_rates_and_ratio_are_none_without_allocation_or_interruptions():
    assert a.goodput_ratio(0, 0) is None and a.per_1000_gpu_days(0, 0) is None
    assert a.mtbi_hours(100, 0, 8) is None and a.expected_restarts(24, None) is None
    # 130 GPU-hours, 2 interruptions, 8-GPU job: 130 / 2 / 8 = 8.125 h; a 24 h job expects 24 / 8.125 restarts.
    assert a.mtbi_hours(130, 2, 8) == 8.125
    assert a.expected_restarts(24, 8.125) == pytest.approx(2.953846, abs=1e-6)
    assert a.per_1000_gpu_days(2, 130) == pytest.approx(369.2308, abs=1e-4)


@given(run=st.integers(0, 10 * 24 * 60), interval=st.integers(0, 24 * 60), gpus=st.integers(0, 1024))
def test_lost_work_never_exceeds_the_jobs_allocation_and_the_ratio_stays_in_0_1(run, interval, gpus):
    lost = a.lost_run_hours(T, T + run * MIN, gpus, interval * MIN)
    allocated = gpus * run / 60
    assert 0 <= lost <= allocated + 1e-9
    ratio = a.goodput_ratio(allocated, lost)
    assert ratio is None if not allocated else 0.0 <= ratio <= 1.0
