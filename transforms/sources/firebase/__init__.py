"""Firebase Authentication exports (``firebase auth:export``, JSON and CSV) → user rows."""
