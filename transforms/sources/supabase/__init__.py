"""The Supabase source: ``auth.users`` (+ ``auth.identities``, ``auth.mfa_factors``) → ZITADEL import bodies (docs/supabase.md)."""
