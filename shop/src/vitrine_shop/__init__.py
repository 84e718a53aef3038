"""vitrine_shop: the reference subject, an e-commerce recommendation assistant for a Swiss shop."""
