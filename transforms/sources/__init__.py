"""Readers of source exports: one subpackage per source system, and the input checks they share."""
