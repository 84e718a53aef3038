"""Judges: criteria in, per-criterion verdicts out, through one interface for every judge."""
