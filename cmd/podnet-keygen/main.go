// Command podnet-keygen writes a development Ed25519 key pair for signing
// approvals: the private key for podnet-webhook and the public key for
// podnet-agent. Production keys come from the cluster's secret management.
package main

import (
	"flag"
	"fmt"
	"os"

	"podnet.io/podnet/pkg/certs"
)

func main() {
	priv := flag.String("private", "_output/keys/approval.key", "where to write the private key (PEM PKCS#8)")
	pub := flag.String("public", "_output/keys/approval.pub", "where to write the public key (PEM PKIX)")
	force := flag.Bool("force", false, "replace an existing key pair")
	flag.Parse()
	if !*force && exists(*priv) && exists(*pub) {
		fmt.Printf("keeping the existing key pair %s, %s (use -force to replace it)\n", *priv, *pub)
		return
	}
	if err := certs.GenerateKeyPair(*priv, *pub); err != nil {
		fmt.Fprintln(os.Stderr, "podnet-keygen:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s and %s\n", *priv, *pub)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
