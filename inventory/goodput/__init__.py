"""Goodput (issue 20): which jobs the infrastructure interrupted, what that cost, and the goodput figures."""
