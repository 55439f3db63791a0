"""Board modules: one per board, glue only (clocks, resets, I/O); the designs inside are
portable."""
