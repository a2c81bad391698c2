// Package layering checks the import rules of the code layout
// (docs/design.md): one room per program and privilege, so that no program
// links what another one needs. Product code never imports tooling or
// tests; the components (agent, webhook, controller, the kubectl plugin, the
// CNI plugin, the wait init container) never import each other, only the
// shared libraries under pkg/ and api/, and pkg/ never imports a component;
// the kubectl plugin links no netlink, CRI or gRPC; the policy and approval
// decisions link no client library; the API types stay free of clients; the
// dataplane knows nothing of the API; and the wait init container links no
// library beyond the standard one and x/sys.
//
// Inside the agent, the rooms beside the reconcile (the sandbox handshake,
// resource claims, the node's hold, the uninstall, NRI, the carry labels,
// the underlay peers) never import each other or the reconcile, and the
// vocabulary they stand on (agent/podstate) imports none of them
// (TestImportLayering). api/v1alpha1 exports no decision
// (TestAPIExportsNoDecision), and a package's doc.go names its rooms or
// reconcilers (TestDocNamesRooms). It holds no code, only those tests.
package layering
