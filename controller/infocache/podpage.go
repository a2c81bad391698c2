package infocache

import (
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/types"
)

// podPage is the part of a JSON PodList page the pod cache reads: the
// decoder skips everything else (containers, status, other annotations)
// without building it, so a page of pods costs a page of PodInfos, not a
// page of Pods.
type podPage struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []podItem `json:"items"`
}

type podItem struct {
	Metadata struct {
		Namespace   string    `json:"namespace"`
		Name        string    `json:"name"`
		UID         types.UID `json:"uid"`
		Annotations struct {
			// Approved is v1alpha1.ApprovedAnnotation (a struct tag
			// cannot name the constant; TestDecodePodPage checks it).
			Approved *string `json:"podnet.io/approved"`
			// Status is v1alpha1.NetworkStatusAnnotation.
			Status string `json:"podnet.io/network-status"`
		} `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
}

// decodePodPage decodes one page of a pod list.
func decodePodPage(r io.Reader) (*podPage, error) {
	var page podPage
	if err := json.NewDecoder(r).Decode(&page); err != nil {
		return nil, fmt.Errorf("decode page: %w", err)
	}
	return &page, nil
}

// podInfo is the PodInfo of a listed pod.
func (it *podItem) podInfo() *PodInfo {
	m := it.Metadata
	approval, ok := "", m.Annotations.Approved != nil
	if ok {
		approval = *m.Annotations.Approved
	}
	return podInfoOf(m.Namespace, m.Name, m.UID, it.Spec.NodeName, approval, ok, m.Annotations.Status)
}
