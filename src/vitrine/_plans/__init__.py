"""Plans: what a suite can run, with their rules declared as data (:mod:`vitrine._plans.base`).

``vitrine._plans.validation`` turns raw options into a validated request. Nothing is imported
here: the package is private, and its users import the module they need.
"""
