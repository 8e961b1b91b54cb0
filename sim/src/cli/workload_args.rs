//! bench_serving workload flags.
