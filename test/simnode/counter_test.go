package simnode

import (
	"net/http"
	"net/url"
	"testing"
)

func TestCounterClassifiesRequests(t *testing.T) {
	cases := []struct {
		method, path, query string
		want                Counts
	}{
		{"GET", "/api/v1/namespaces/default/pods/p1", "", Counts{Gets: 1}},
		{"GET", "/api/v1/namespaces/default/pods", "", Counts{Lists: 1}},
		{"GET", "/api/v1/pods", "labelSelector=a", Counts{Lists: 1}},
		{"GET", "/api/v1/namespaces/default", "", Counts{Gets: 1}},
		{"GET", "/apis/podnet.io/v1alpha1/ipclaims", "watch=true", Counts{Watches: 1}},
		{"GET", "/apis/podnet.io/v1alpha1/ipclaims", "", Counts{Lists: 1}},
		{"GET", "/apis/podnet.io/v1alpha1/ipclaims/data.10-0-0-1", "", Counts{Gets: 1}},
		{"GET", "/apis/podnet.io/v1alpha1", "", Counts{Discovery: 1}},
		{"GET", "/api", "", Counts{Discovery: 1}},
		{"PATCH", "/api/v1/namespaces/default/pods/p1/status", "", Counts{Writes: 1}},
		{"POST", "/apis/podnet.io/v1alpha1/ipclaims", "", Counts{Writes: 1}},
		{"DELETE", "/apis/podnet.io/v1alpha1/ipclaims/x", "", Counts{Writes: 1}},
	}
	for _, c := range cases {
		var ctr Counter
		ctr.count(&http.Request{Method: c.method, URL: &url.URL{Path: c.path, RawQuery: c.query}})
		if got := ctr.Snapshot(); got != c.want {
			t.Errorf("%s %s?%s counted %+v, want %+v", c.method, c.path, c.query, got, c.want)
		}
	}
}
