"""The live lane: real subjects, an LLM judge, sanitized session receipts.

Import the pieces from their modules; this package imports nothing on its own so that the
suite can declare the live plans without loading the subject or a provider.
"""
