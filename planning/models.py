"""Capacity planning, contracts and procurement (see the planning issue)."""
