"""The Ory Kratos source: identities JSON (admin API, kratos CLI, NDJSON) → ZITADEL import bodies (docs/kratos.md)."""
