// Package layering checks the import rules of the code layout table in the
// README: product code never imports tooling or tests, tooling never imports
// tests, the API types stay free of clients, and the dataplane knows nothing
// of the API, and the wait init container links no library beyond the
// standard one and x/sys. It holds no code, only that test.
package layering
