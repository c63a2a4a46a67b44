"""Keycloak realm exports (single or split) → user rows."""
