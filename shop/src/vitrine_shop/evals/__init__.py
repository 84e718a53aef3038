"""The shop's evaluation suite, written against vitrine's public API as any user's would be.

``vitrine --suite vitrine_shop.evals.suite:SUITE`` (the default) loads it. Nothing is imported
here so that loading the suite for a refused command stays cheap.
"""
