"""The evaluation board: a local web app over the run store (``vitrine board``).

It reads what the store already holds (sealed benchmark runs, offline suite reports, live
session receipts, red-team runs, RAG and behaviour reports, mutant kill matrices) and renders
it server-side with Jinja2 autoescape; the only writes it makes are a red-team sign-off through
the same sealed ledger as the command line, and a run started through the command line itself.
"""
