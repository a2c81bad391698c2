// Package cnisocket is the wire between podnet's chained CNI plugin
// (cmd/podnet-cni) and the node agent: one JSON request per unix
// socket connection naming a pod and the sandbox being set up, and one JSON
// answer once the pod's networks are ready in that sandbox, or why not.
//
// The server side accepts connections only on a socket it creates itself
// (folder 0700, socket 0600: root only), serves only a peer whose
// kernel-reported uid (SO_PEERCRED) is root's, as the runtime's CNI plugin
// runs, or the agent's own, and at most MaxConns at once (the others are
// answered at once why not); it reads one request of at most 16 KiB within
// ReadTimeout, checks each field against its limit (the pod's namespace,
// name and UID are required) and hands it to an Attacher; it cancels the
// Attacher's wait when the plugin goes away. The client side is what the
// plugin calls.
//
// What it must not do: decide anything about pods. It checks only that a
// request is well formed; whether a pod may be attached, and the attach
// itself, are the agent's (agent/sandbox's Handshake and the reconcile). It
// imports only the standard library so the plugin binary stays small.
package cnisocket
