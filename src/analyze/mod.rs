//! Pure analysis over snapshots: no I/O, no printing.
