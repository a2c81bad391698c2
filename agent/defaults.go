package agent

// Defaults of the agent's command line that shape how it takes a burst of
// pods (a Deployment rollout, a scale-up, a node drain elsewhere), chosen
// from TestBenchAgentBurst (test/agent) and TestBenchClusterBurst
// (test/burst) on a 2-core node.
const (
	// DefaultConcurrency is how many pods are configured at once. An
	// attach is mostly waiting on the API server (claims, status), not
	// on the node's CPU, so a burst needs more workers than cores.
	DefaultConcurrency = 16
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst are the client-side
	// limits, each applied per resource kind (client-go gives each kind's
	// REST client its own token bucket). A pod start writes the pod twice
	// (status annotation, condition) and one claim per address: a burst of
	// 100 pods with two networks is 200 pod writes and 200 claim creates,
	// within DefaultKubeAPIBurst without waiting for tokens; the earlier
	// 20/40 made that burst wait about 8 s for tokens. Steady state costs no request at all, so the limits
	// bound only churn; API Priority and Fairness (deploy/podnet/
	// flowcontrol.yaml) protects the server from many agents at once.
	DefaultKubeAPIQPS   = 50
	DefaultKubeAPIBurst = 500
)
