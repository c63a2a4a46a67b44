"""Checks of a waiting user's password against the old system's own sign-in API (docs/companion.md#old-systems).

``answer`` (what a check can say), ``transport`` (the bounded HTTPS call), ``settings`` (which
system, from the flags), one module per system: ``auth0``, ``keycloak``, ``cognito``, ``okta``,
``firebase``, ``application`` (the small HTTP contract for any application).
"""
