// Package hostdev is the one rule of which node NICs a host-device network
// selects: by name pattern, driver and PCI address. The API's validation,
// the webhook, the node's placement labels and the agent's choice of a NIC
// all call it, so that what one says a network selects the others agree
// with.
package hostdev
