"""Reports: the suite report model and its console, JSON and HTML renderings."""
