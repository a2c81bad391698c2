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
		Namespace string    `json:"namespace"`
		Name      string    `json:"name"`
		UID       types.UID `json:"uid"`
		// Labels are read only for a pod with an approved interface
		// (PodInfo.Labels): the rest skip them undecoded.
		Labels      json.RawMessage `json:"labels"`
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
func (it *podItem) podInfo() (*PodInfo, error) {
	m := it.Metadata
	approval, ok := "", m.Annotations.Approved != nil
	if ok {
		approval = *m.Annotations.Approved
	}
	info := podInfoOf(m.Namespace, m.Name, m.UID, it.Spec.NodeName, approval, ok, m.Annotations.Status)
	if info.OnNetworks() && len(m.Labels) > 0 {
		var labels map[string]string
		if err := json.Unmarshal(m.Labels, &labels); err != nil {
			return nil, fmt.Errorf("pod %s/%s: labels: %w", m.Namespace, m.Name, err)
		}
		info.Labels = labelText(labels)
	}
	return info, nil
}
