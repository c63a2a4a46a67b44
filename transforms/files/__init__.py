"""Local-or-gs:// storage: reading and private writing, spill files, locks and the guards on what a run may replace."""
