"""The Clerk source: Clerk's dashboard CSV and JSON user exports → ZITADEL import bodies (docs/clerk.md)."""
