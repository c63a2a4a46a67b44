"""Any table of users (CSV, NDJSON, a JSON array) with a column mapping: ``migrate table``."""
