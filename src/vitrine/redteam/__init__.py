"""The red team: attacks as data, campaigns with an enforced model-call ceiling, deterministic
detectors with an optional judge fallback, static cases, adaptive attackers, findings that
need a human sign-off, and JSON / JUnit / SARIF exports.

Submodules are imported where they are used; importing this package costs nothing.
"""
