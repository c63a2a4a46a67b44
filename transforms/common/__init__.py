"""Names and small helpers every stage shares: element shapes, dead-letter reasons, errors, ids, durations, progress."""
