// Package scale holds the scale bench (`make bench-scale`, and a short
// form in `make bench`): one real etcd and kube-apiserver (envtest), K
// simulated nodes in one process (test/simnode: the real agent with only
// its CRI and netlink seams faked, each with its own client, user agent
// and request counter), the real podnet-controller, and a fake kubelet
// that runs and deletes pods on spec.nodeName. It prints, per K, what
// grows with the cluster, for today's design and the earlier one.
package scale
