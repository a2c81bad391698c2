// Package bench holds what the `make bench` figures of every package share:
// percentiles of measured durations and the machine's load, printed next to
// latency figures because absolute times move with it.
//
// Size picks each bench's size: the full one, or its smallest when
// PODNET_BENCH_SMOKE=1 (make test).
//
// It measures nothing itself and asserts nothing: figures are printed as
// "BENCH <name> <value> <unit>" lines by the benches, never tested.
package bench
