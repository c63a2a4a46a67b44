"""Scheduled syncs: compare today's users with the state, change files, apply them, commit the state."""
