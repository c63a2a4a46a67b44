"""The Okta source: Okta's user export CSV → ZITADEL import bodies (docs/okta.md)."""
