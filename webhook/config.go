package webhook

// The markers below generate deploy/webhook/manifests.yaml and
// deploy/rbac/webhook/role.yaml (hack/manifests.sh); never edit those files.
//
// Why each setting:
//   - pods CREATE and UPDATE: every UPDATE re-derives the approval, so an
//     edited or copied approval never survives.
//   - namespaceSelector: only namespaces an admin opted in; never kube-system
//     or podnet's own namespace, so an outage can never block the system pods
//     that would repair it.
//   - matchConditions: only pods with an annotation under podnet.io/ (before
//     or after the change) are sent (a copied approval is one), and new pods
//     that name ResourceClaims (whose claims may ask for podnet networks:
//     the pod must then be held and lose NET_RAW as for the annotation), so
//     with failurePolicy Fail an outage blocks only pods that ask for
//     networks or devices;
//     and never the agent's own writes (its status annotation), so each
//     podnet pod costs one admission call and the webhook may refuse every
//     other change of podnet's own annotations. With --multus-requests,
//     pods with Multus' k8s.v1.cni.cncf.io/networks must be sent too: the
//     kustomize component deploy/components/multus-migration widens the
//     condition.
//   - sideEffects None: admission writes nothing, so dry-run requests are
//     sent too; they are judged but get no signature, which a tenant could
//     otherwise keep.
//   - timeoutSeconds 5: decisions read only the cache, but for one GET per
//     claim or template a new pod names; a slow webhook should fail the
//     request rather than hold the client.
//   - resourceclaims CREATE only, in the same namespaces as pods: a claim's
//     spec never changes afterwards, so its approval is signed once; an
//     UPDATE of the approval annotations is refused by the
//     podnet-claim-approval admission policy (deploy/policies). Every claim
//     of an opted-in namespace is sent, whatever its classes: which classes
//     are podnet's depends on the profiles, which only the webhook reads.
//     A claim in a namespace not opted in gets no approval, and the agent
//     refuses its podnet devices.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=podnet-webhook
// +kubebuilder:webhook:mutating=true,path=/mutate-v1-pod,name=pods.podnet.io,serviceName=podnet-webhook,serviceNamespace=podnet-system,groups="",resources=pods,verbs=create;update,versions=v1,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,matchPolicy=Equivalent,admissionReviewVersions=v1,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"podnet.io/enabled","operator":"In","values":["true"]},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","podnet-system"]}]},"matchConditions":[{"name":"not-the-agent","expression":"request.userInfo.username != 'system:serviceaccount:podnet-system:podnet-agent'"},{"name":"asks-podnet","expression":"(has(object.metadata.annotations) && object.metadata.annotations.exists(k, k.startsWith('podnet.io/'))) || (oldObject != null && has(oldObject.metadata.annotations) && oldObject.metadata.annotations.exists(k, k.startsWith('podnet.io/'))) || (request.operation == 'CREATE' && has(object.spec.resourceClaims))"}]}`
// +kubebuilder:webhook:mutating=true,path=/mutate-resource-v1-resourceclaim,name=resourceclaims.podnet.io,serviceName=podnet-webhook,serviceNamespace=podnet-system,groups=resource.k8s.io,resources=resourceclaims,verbs=create,versions=v1,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,reinvocationPolicy=Never,matchPolicy=Equivalent,admissionReviewVersions=v1,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"podnet.io/enabled","operator":"In","values":["true"]},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","podnet-system"]}]}}`

// The webhook reads profiles and opted-in namespaces through its informer
// cache, and the claims and templates a new pod names with one GET each
// (podclaims.go). Nothing else: it never reads pods from the API server,
// and writes nothing at all.
//
// +kubebuilder:rbac:groups=podnet.io,resources=networkprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
