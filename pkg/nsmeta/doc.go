// Package nsmeta is the form in which podnet's components cache
// namespaces: metadata only, trimmed to the name and the labels that grant
// networks. The webhook and the agent both watch namespaces this way, so
// that thousands of namespaces cost them little memory.
//
// It must not read anything but what it is handed.
package nsmeta
