"""Team allocations (issue 36): GPU-hour budgets and concurrent-GPU limits per team, partition or GPU model and period,
requested by a team and approved by managers, their use from the allocation figures and the warnings at 80 and
100 %."""
