package main

import "embed"

// static holds the chart's own files, which deploy/ has no counterpart
// for: helpers, the approval key Secrets, the notes and monitoring.
//
//go:embed all:static
var static embed.FS
