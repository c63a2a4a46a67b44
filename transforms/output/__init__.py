"""Import bodies: batching, rendering, dead letters of duplicates, grants, the manifest and body checks."""
