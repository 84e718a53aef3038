"""Continuous-integration kit: workflow files for a suite's evaluation layers."""
