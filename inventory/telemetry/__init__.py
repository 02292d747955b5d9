"""Telemetry: sources (Prometheus/DCGM, exporter scrape, Slurm accounting), pulls, hourly and daily
rollups, and the utilization queries behind the dashboards. See ``pull.py`` for the flow."""
