"""The trickle-migration companion (docs/companion.md)."""
