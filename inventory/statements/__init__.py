"""Monthly statements (issue 36): showback / chargeback of allocated GPU-hours per team.

The module API:

``models``
    ``RateCard(effective_from, currency, note)`` with ``Rate(card, gpu_model or any, partition or any,
    price_per_gpu_hour)``; ``ClosedMonth`` (a month issued: its card, when, by whom, the fleet's GPU-hours);
    ``Statement`` per team and month (team None: "no team") with ``StatementLine`` rows (usage per partition, GPU model
    and Slurm user; the infrastructure's credit per partition and GPU model) and totals; ``Adjustment`` (a correction of
    a closed month, landing on the team's next statement). ``Statement.objects.visible_to(user)``.
``pricing``
    ``card_for(month)`` (the card in effect on the month's first day), ``Prices.of(card).price(gpu_model_id,
    partition)`` (the most specific rate), ``NoRate``.
``build``
    ``build(month, now) -> (card, {team name or None: Draft}, fleet GPU-hours)``: the month's figures from
    ``allocation.clipped_gpu_time`` (usage) and the goodput queries (credit), priced.
``issuing`` (the services)
    ``issue_month(month, user=None, now=None) -> (ClosedMonth, issued)``: closes an ended month once (idempotent,
    safe under concurrent calls); ``adjust(team, corrects, amount, reason, user=None, gpu_hours=None)``.
``render``
    ``to_csv(statement)``, ``to_pdf(statement)`` (reportlab), ``filename(statement, extension)``.
``tasks``
    ``issue_monthly_statements`` (beat, the 1st of each month): issues last month, e-mails each team's statement with
    its CSV and PDF to the team's address, PI and managers, once.
``policy``
    ``inventory.read_statement`` / ``read_every_statement`` / ``issue_statements`` / ``edit_ratecard``.
Pages (``views``, ``urls``): ``/inventory/statements/`` (month × team, filters, the issue form),
``/inventory/statements/<id>/`` (lines, totals, credit, adjustments) with ``csv/`` and ``pdf/``,
``/inventory/statements/issue/`` (POST), ``/inventory/rate-cards/`` (list, detail, add, edit, delete).
API (``api``): ``/api/inventory/statements/`` (read; ``issue/`` and ``adjust/`` POST for managers),
``/api/inventory/rate-cards/``.
"""
