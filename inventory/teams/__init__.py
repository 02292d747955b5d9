"""Teams (issue 36): a team, its members and Slurm account, its GPU allocations, their sync with Slurm and its
monthly statements."""
