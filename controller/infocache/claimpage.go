package infocache

import (
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
)

// claimPage is the part of a JSON IPClaimList page the claim cache reads:
// the decoder skips the rest (managedFields, other labels and metadata,
// status) without building it, so a page of claims costs a page of
// ClaimInfos, not a page of IPClaims.
type claimPage struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []claimItem `json:"items"`
}

type claimItem struct {
	Metadata struct {
		Name            string    `json:"name"`
		UID             types.UID `json:"uid"`
		ResourceVersion string    `json:"resourceVersion"`
		// Labels are read whole: a claim has a handful, and a struct
		// tag cannot name the label constants.
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec v1alpha1.IPClaimSpec `json:"spec"`
}

// decodeClaimPage decodes one page of a claim list.
func decodeClaimPage(r io.Reader) (*claimPage, error) {
	var page claimPage
	if err := json.NewDecoder(r).Decode(&page); err != nil {
		return nil, fmt.Errorf("decode page: %w", err)
	}
	return &page, nil
}

// claimInfo is the ClaimInfo of a listed claim.
func (it *claimItem) claimInfo() *ClaimInfo {
	m := it.Metadata
	return claimInfoOf(m.Name, m.UID, m.ResourceVersion, m.Labels, it.Spec)
}
