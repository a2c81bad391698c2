// Command localcluster brings podnet's local Kubernetes cluster up and down
// (see hack/localcluster), and runs the cluster's loopback API forwarder.
//
//	localcluster up [--name podnet] [--nodes 1|2]
//	localcluster down [--name podnet]
//	localcluster kubeconfig [--name podnet]
//	localcluster import [--name podnet] TARBALL...
//	localcluster forward --netns PATH --target HOST:PORT --addr-file FILE
//
// It must not hold any cluster logic of its own: everything lives in
// podnet.io/podnet/hack/localcluster, which tests use directly.
package main
