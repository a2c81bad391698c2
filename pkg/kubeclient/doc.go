// Package kubeclient is the API client setup every podnet binary shares:
// one scheme with Kubernetes' and podnet's types, and the kubeconfig with
// the component's user agent and its client-side rate limit, so that each
// component identifies itself to API Priority and Fairness and none can
// flood the API server. It makes no request itself.
package kubeclient
