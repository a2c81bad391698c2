package bench

import "os"

// SmokeEnv is the environment variable that, set to "1", runs every
// figure at its smallest size: `make test` runs them so, to keep `make
// bench` working (its inputs built, its checks passing) without paying for
// the figures.
const SmokeEnv = "PODNET_BENCH_SMOKE"

// Smoke reports whether SmokeEnv asks for the smallest size.
func Smoke() bool { return os.Getenv(SmokeEnv) == "1" }

// Size is full, or small when Smoke: every bench picks its size here, so
// the smoke run takes the same code path and checks as the figures, only
// on less work.
func Size[T any](full, small T) T {
	if Smoke() {
		return small
	}
	return full
}

// FullEnv is the environment variable that, set to "1", runs `make
// bench-full`: every figure at its largest size where `make bench`'s
// headline run takes a smaller one (Levels).
const FullEnv = "PODNET_BENCH_FULL"

// Full reports whether FullEnv asks for the largest sizes.
func Full() bool { return os.Getenv(FullEnv) == "1" }

// Levels is full under `make bench-full`, headline under `make bench`
// and small in the smoke run: for a figure whose headline answers its
// question at less than the whole run's cost.
func Levels[T any](full, headline, small T) T {
	switch {
	case Smoke():
		return small
	case Full():
		return full
	}
	return headline
}
