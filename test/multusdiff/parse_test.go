package multusdiff

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	nadutils "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/utils"
	"gopkg.in/k8snetworkplumbingwg/multus-cni.v4/pkg/k8sclient"
	multustypes "gopkg.in/k8snetworkplumbingwg/multus-cni.v4/pkg/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/pkg/policy"
)

// printCases prints the computed comparison of every corpus entry, to help
// write verdicts for new entries; it never changes the result of the test.
var printCases = flag.Bool("print", false, "print each corpus entry's computed comparison")

// podNamespace is the namespace of the pod every annotation is put on.
const podNamespace = "tenant-a"

// multusAnnotation is the key Multus and the NAD client read.
const multusAnnotation = "k8s.v1.cni.cncf.io/networks"

// The verdicts a corpus entry may carry.
const (
	// verdictSame: both refuse, or both accept with the same meaning.
	verdictSame = "same"
	// verdictRefused: Multus accepts, podnet refuses on purpose; podnet's
	// error must name entry.Key.
	verdictRefused = "refused-on-purpose"
	// verdictExtension: Multus refuses or ignores, podnet accepts a podnet
	// extension of the syntax (for example tuning eth0's MTU).
	verdictExtension = "extension"
	// verdictDifferent: both accept, podnet on purpose with another
	// meaning; the reason says why.
	verdictDifferent = "different-on-purpose"
	// verdictBug: a known podnet bug. The test fails while any remains.
	verdictBug = "podnet-bug"
)

// entry is one line of testdata/corpus.json: an annotation, where it comes
// from, and the written verdict on how podnet's reading compares with
// Multus' (and, where the NAD client reads it otherwise than Multus, with
// the NAD client's).
type entry struct {
	Annotation string `json:"annotation"`
	Source     string `json:"source"`
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason,omitempty"`
	// Key is the annotation key or element part podnet's error must name
	// when it refuses on purpose.
	Key string `json:"key,omitempty"`
	// NAD is the verdict against the NAD client where its parser disagrees
	// with Multus'; empty means it agrees with Multus.
	NAD string `json:"nad,omitempty"`
}

// element is the meaning of one selection element: what podnet and Multus
// must agree on.
type element struct {
	Name, Namespace, Interface, MAC string
	IPs                             []string
}

// reading is what one parser made of an annotation.
type reading struct {
	Elements []element
	Err      string
}

func (r reading) accepted() bool { return r.Err == "" }

func TestMultusParity(t *testing.T) {
	corpus := loadCorpus(t)
	counts := map[string]int{}
	for i, e := range corpus {
		podnet, multus, nad := readPodnet(e.Annotation), readMultus(e.Annotation), readNAD(e.Annotation)
		got, gotNAD := compare(podnet, multus), compare(podnet, nad)
		if *printCases {
			fmt.Printf("%d %q\n  multus=%s nad=%s\n  podnet=%+v\n  multus=%+v\n  nad=%+v\n", i, e.Annotation, got, gotNAD, podnet, multus, nad)
		}
		counts[e.Verdict]++
		checkVerdict(t, "Multus", i, e, e.Verdict, got, podnet)
		if !reflect.DeepEqual(multus, nad) || e.NAD != "" {
			want := e.NAD
			if want == "" {
				want = e.Verdict
			}
			checkVerdict(t, "NAD client", i, e, want, gotNAD, podnet)
		}
	}
	t.Logf("%d annotations: %v", len(corpus), counts)
	if counts[verdictBug] > 0 {
		t.Errorf("%d annotations carry the verdict %q", counts[verdictBug], verdictBug)
	}
}

// checkVerdict fails when the computed comparison does not match the
// written verdict.
func checkVerdict(t *testing.T, upstream string, i int, e entry, verdict, got string, podnet reading) {
	t.Helper()
	if verdict != verdictSame && strings.TrimSpace(e.Reason) == "" {
		t.Errorf("entry %d %q: verdict %q without a reason", i, e.Annotation, verdict)
	}
	if verdict == verdictBug {
		return
	}
	if got != verdict {
		t.Errorf("entry %d %q: written verdict %q, but podnet and %s compare as %q\n  podnet: %+v", i, e.Annotation, verdict, upstream, got, podnet)
		return
	}
	if verdict == verdictRefused && (e.Key == "" || !strings.Contains(podnet.Err, e.Key)) {
		t.Errorf("entry %d %q: podnet's refusal must name %q; it says: %s", i, e.Annotation, e.Key, podnet.Err)
	}
}

// compare classifies podnet's reading against an upstream one.
func compare(podnet, upstream reading) string {
	switch {
	case !podnet.accepted() && !upstream.accepted():
		return verdictSame
	case !podnet.accepted():
		return verdictRefused
	case !upstream.accepted():
		return verdictExtension
	case reflect.DeepEqual(podnet.Elements, upstream.Elements):
		return verdictSame
	default:
		return verdictDifferent
	}
}

func loadCorpus(t *testing.T) []entry {
	t.Helper()
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var corpus []entry
	if err := json.Unmarshal(raw, &corpus); err != nil {
		t.Fatalf("testdata/corpus.json: %v", err)
	}
	seen := map[string]int{}
	for i, e := range corpus {
		if j, dup := seen[e.Annotation]; dup {
			t.Fatalf("testdata/corpus.json: entry %d repeats entry %d %q", i, j, e.Annotation)
		}
		seen[e.Annotation] = i
		if !slices.Contains([]string{verdictSame, verdictRefused, verdictExtension, verdictDifferent, verdictBug}, e.Verdict) {
			t.Fatalf("testdata/corpus.json: entry %d %q: unknown verdict %q", i, e.Annotation, e.Verdict)
		}
	}
	return corpus
}

// readPodnet reads the annotation with podnet's parser. The namespace is
// defaulted to the pod's, as Multus does; podnet's decision refuses any
// other one later.
func readPodnet(annotation string) reading {
	reqs, errs := policy.ParseRequest(annotation)
	if len(errs) > 0 {
		return reading{Err: errs.ToAggregate().Error()}
	}
	var els []element
	for _, r := range reqs {
		ns := r.Namespace
		if ns == "" {
			ns = podNamespace
		}
		if r.Primary {
			// Tuning eth0 attaches nothing; Multus has no such element.
			els = append(els, element{Interface: r.Interface})
			continue
		}
		els = append(els, element{Name: r.Name, Namespace: ns, Interface: r.Interface, MAC: r.MAC, IPs: r.IPs})
	}
	return reading{Elements: els}
}

func pod(annotation string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: podNamespace,
		Annotations: map[string]string{multusAnnotation: annotation},
	}}
}

// readMultus reads the annotation with Multus' own GetPodNetwork.
func readMultus(annotation string) reading {
	nets, err := k8sclient.GetPodNetwork(pod(annotation))
	_, none := err.(*k8sclient.NoK8sNetworkError)
	return readUpstream(nets, err, none, func(n *multustypes.NetworkSelectionElement) element {
		return element{Name: n.Name, Namespace: n.Namespace, Interface: n.InterfaceRequest, MAC: n.MacRequest, IPs: n.IPRequest}
	})
}

// readNAD reads the annotation with the NAD client's parser.
func readNAD(annotation string) reading {
	nets, err := nadutils.ParsePodNetworkAnnotation(pod(annotation))
	_, none := err.(*nadv1.NoK8sNetworkError)
	return readUpstream(nets, err, none, func(n *nadv1.NetworkSelectionElement) element {
		return element{Name: n.Name, Namespace: n.Namespace, Interface: n.InterfaceRequest, MAC: n.MacRequest, IPs: n.IPRequest}
	})
}

// readUpstream turns an upstream parser's answer into a reading, naming
// unnamed interfaces as Multus' CNI ADD does: net<position>, the cluster
// network being position 0. none says the error means "no annotation".
func readUpstream[E any](nets []E, err error, none bool, el func(E) element) reading {
	if none {
		return reading{}
	}
	if err != nil {
		return reading{Err: err.Error()}
	}
	var els []element
	for i, n := range nets {
		e := el(n)
		if e.Interface == "" {
			e.Interface = fmt.Sprintf("net%d", i+1)
		}
		els = append(els, e)
	}
	return reading{Elements: els}
}
