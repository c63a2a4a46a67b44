"""Sending a manifest's bodies and calls to ZITADEL, resumably, and verifying what landed."""
