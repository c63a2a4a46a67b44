"""Auth0 exports (profiles, password hashes, MFA) → user rows."""
