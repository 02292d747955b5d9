"""Goodput (issue 20): which jobs the infrastructure interrupted, what that cost, and the goodput figures.

The module API, for the dashboard, pages, recommendation and sizing built on it:

``attribution`` (plain Python, no Django)
    ``classify(state, start, end, node_ids, faults, window, lag) -> Attribution(cause, reason, fault) | None``;
    ``Fault(reason, ts, node_id, gpu_id, xid_event_id, transition_id, until)``; ``since_checkpoint(run, interval)``,
    ``lost_run_hours(start, end, gpus, interval)``, ``restart_wait(end, next_start, cap, now)``,
    ``mtbi_hours(gpu_hours, interruptions, gpus)``, ``expected_restarts(job_hours, mtbi)``,
    ``per_1000_gpu_days(interruptions, gpu_hours)``, ``goodput_ratio(allocated, lost_run)``; constants
    ``INFRASTRUCTURE``/``USER``/``SCHEDULER`` and the reasons (``REASONS``: code → words).
``models.Interruption``
    One row per interrupted run (job, end): cause, reason, node, GPU, XID event, transition, fault time, and for
    the infrastructure's the estimate (``lost_run_gpu_hours``, ``restart_wait_hours``, ``lost_wait_gpu_hours``,
    ``lost_gpu_hours``, ``checkpoint_minutes``, ``assumptions``).
``recording.record_interruptions(start, end, now)``
    Classify the jobs that ended in [start, end) and upsert their rows (idempotent); ``tasks.record_interruptions``
    runs it every 10 minutes over ``GOODPUT_LOOKBACK_HOURS``.
``queries``
    ``goodput_by(group_by, range_key, filters, now, gpus, job_hours)`` → the figures per team, partition, site,
    gpu_model, node or month (UTC calendar months, oldest first); ``interruptions(filters, start, end)`` → a
    queryset of rows; ``jobs(filters)`` → the Slurm jobs the filters select; ``cost_basis(groups)`` → what the lost
    cost priced, in words; ``repeat_offenders(gpu_model, range_key, minimum)`` → a model's nodes with ``minimum``+
    infrastructure interruptions, worst first (the GPU model page; ``GOODPUT_REPEAT_OFFENDER_MIN``).
``hooks``
    ``register_checkpoint_provider(provider)`` (planning: ``provider(accounts) -> {account: minutes}``) and
    ``register_ticket_finder(finder)`` (support registers ``support.queries.interruption_tickets``).
``api``
    ``GET /api/inventory/goodput/`` and ``/api/inventory/interruptions/``.
``views`` (the pages, over ``queries``)
    ``GoodputView`` (``/inventory/goodput/``, ``?format=csv``), ``InterruptionListView``
    (``/inventory/interruptions/``, filters ``filters.InterruptionPageFilterSet``, table ``tables``), and the
    mixins ``NodeGoodputMixin`` / ``GPUModelGoodputMixin`` of the node and GPU model pages (30 days). The team
    pages (``/inventory/teams/``) and their figures (``team_rows``, ``team_figures``) are ``inventory.teams``'.
"""
