// Package docs checks that what the README and docs/ cite as proof exists:
// every test or fuzz target they name in backquotes is a function of the
// repository, and every subtest they name is a t.Run of it. It holds no
// code, only that test.
package docs
