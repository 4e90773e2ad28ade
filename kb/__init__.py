"""Workload-invariant ASP rule library (package data)."""
