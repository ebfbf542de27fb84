package webui

import "time"

// The JSON the server sends the page. Shapes are the contract between the
// Go server and assets/app.js; field names are lowerCamel.

// Ref names an object: Kind as the API spells it ("Kustomization").
type Ref struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// Session is GET /api/session.
type Session struct {
	CSRFToken string `json:"csrfToken"`
	User      string `json:"user"` // from SelfSubjectReview; "" when unknown
	ReadOnly  bool   `json:"readOnly"`
	Context   string `json:"context"` // kubeconfig context, for display
	Server    string `json:"server"`  // API server URL, for display
}

// Summary is one Flux object in the overview. State is one of "ready",
// "failed", "reconciling", "stalled", "suspended", "unknown".
type Summary struct {
	Ref
	State     string     `json:"state"`
	Ready     string     `json:"ready"` // Ready condition status: "True", "False", "Unknown" or ""
	Reason    string     `json:"reason"`
	Message   string     `json:"message"`
	Revision  string     `json:"revision"` // artifact revision (sources) or lastAppliedRevision
	Suspended bool       `json:"suspended"`
	SourceRef *Ref       `json:"sourceRef,omitempty"` // Kustomization, HelmRelease (chart's source), HelmChart
	DependsOn []Ref      `json:"dependsOn,omitempty"`
	Updated   *time.Time `json:"updated,omitempty"` // Ready's lastTransitionTime
}

// Objects is GET /api/objects.
type Objects struct {
	Objects []Summary `json:"objects"`
	// Apps are the Argo CD Applications, by namespace and name.
	Apps      []AppSummary `json:"apps"`
	Connected bool         `json:"connected"`
	// Hidden lists the kinds the user may not list (RBAC), or whose CRD
	// is not installed: absent, not an error.
	Hidden []string `json:"hidden,omitempty"`
}

// Condition is a status condition.
type Condition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	Reason             string     `json:"reason"`
	Message            string     `json:"message"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	ObservedGeneration int64      `json:"observedGeneration,omitempty"`
}

// Artifact is a source's status.artifact.
type Artifact struct {
	Revision       string     `json:"revision"`
	Digest         string     `json:"digest"`
	Size           int64      `json:"size"`
	URL            string     `json:"url"`
	LastUpdateTime *time.Time `json:"lastUpdateTime,omitempty"`
}

// Snapshot is one status.history entry (Kustomization and HelmRelease).
type Snapshot struct {
	Revision    string            `json:"revision"` // metadata revision, or HelmRelease chart version
	Digest      string            `json:"digest"`
	First       *time.Time        `json:"firstReconciled,omitempty"`
	Last        *time.Time        `json:"lastReconciled,omitempty"`
	DurationSec float64           `json:"durationSeconds"`
	Status      string            `json:"status"`
	Total       int64             `json:"totalReconciliations"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// Event is a core/v1 Event of an object or of its source.
type Event struct {
	Object  Ref       `json:"object"`
	Type    string    `json:"type"` // Normal, Warning
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	Count   int32     `json:"count"`
	Source  bool      `json:"source"` // an event of the object's source
}

// Detail is GET /api/object/{kind}/{namespace}/{name}.
type Detail struct {
	Summary               Summary           `json:"summary"`
	Conditions            []Condition       `json:"conditions"`
	Artifact              *Artifact         `json:"artifact,omitempty"`
	LastAppliedRevision   string            `json:"lastAppliedRevision,omitempty"`
	LastAttemptedRevision string            `json:"lastAttemptedRevision,omitempty"`
	History               []Snapshot        `json:"history"`
	Events                []Event           `json:"events"` // newest first
	Source                *Summary          `json:"source,omitempty"`
	SourceArtifact        *Artifact         `json:"sourceArtifact,omitempty"`
	Annotations           map[string]string `json:"annotations,omitempty"`
	// Image is the image automation chain of an image kind's object.
	Image *ImageChain `json:"image,omitempty"`
	// CanPatch: the user may patch the object (SelfSubjectAccessReview),
	// so the actions can work; false hides them.
	CanPatch bool           `json:"canPatch"`
	Spec     map[string]any `json:"spec,omitempty"`
}

// TreeNode is GET /api/tree/{kind}/{namespace}/{name}: the object, and
// what it applied (inventory; HelmReleases from Helm storage). Health is
// kstatus: "Current", "InProgress", "Failed", "Terminating", "NotFound",
// "Unknown".
type TreeNode struct {
	Ref
	Health   string      `json:"health"`
	Message  string      `json:"message,omitempty"`
	Children []*TreeNode `json:"children,omitempty"`
}

// FieldDrift is one drifted field: Old is the desired (Git) value, New the
// live value another manager wrote; both JSON, "" when absent.
type FieldDrift struct {
	Path    string `json:"path"`
	Old     string `json:"old"`
	New     string `json:"new"`
	Manager string `json:"manager,omitempty"`
}

// Drift is one corrected drift of one object, from a DriftCorrected event.
type Drift struct {
	Owner   Ref          `json:"owner"`  // the Kustomization (or HelmRelease)
	Object  Ref          `json:"object"` // the drifted object
	Fields  []FieldDrift `json:"fields"`
	Time    time.Time    `json:"time"` // when it was corrected (last time)
	Count   int32        `json:"count"`
	Message string       `json:"message"` // the event's message, as sent
	Reason  string       `json:"reason"`  // DriftCorrected (Kustomization) or DriftDetected (HelmRelease)
}

// DriftList is GET /api/drift[?owner=Kind/namespace/name].
type DriftList struct {
	Drift []Drift `json:"drift"` // newest first
}

// Graph is GET /api/graph: nodes are Flux objects (id "Kind/namespace/name"),
// edges "source" (source → user; GitRepository → HelmChart → HelmRelease;
// ImageRepository → ImagePolicy → ImageUpdateAutomation ← GitRepository),
// "dependsOn" (dependency → dependent) and "applies" (a Kustomization → the
// Kustomizations and HelmReleases in its inventory).
type Graph struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is one object of the graph.
type GraphNode struct {
	ID string `json:"id"`
	Ref
	State string `json:"state"`
}

// GraphEdge joins two node ids.
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Type string `json:"type"` // "source", "dependsOn" or "applies"
}

// YAML is GET /api/yaml?apiVersion=&kind=&namespace=&name=: the live object
// without managedFields, and managedFields on their own (folded in the page).
type YAML struct {
	Ref
	YAML          string `json:"yaml"`
	ManagedFields string `json:"managedFields,omitempty"`
}

// ObjectDiff is one object of GET /api/diff/{namespace}/{name} (a
// Kustomization): Action "created", "configured", "deleted", "unchanged",
// "skipped" (kustomize.toolkit.fluxcd.io/reconcile: disabled).
type ObjectDiff struct {
	Object Ref          `json:"object"`
	Action string       `json:"action"`
	Fields []FieldDrift `json:"fields,omitempty"` // Old: live value, New: desired value
}

// DiffResult is GET /api/diff/{namespace}/{name}.
type DiffResult struct {
	Revision string       `json:"revision"`
	Objects  []ObjectDiff `json:"objects"`
}

// Action is the body of POST /api/action/{reconcile|suspend|resume}; the
// request carries the header X-CSRF-Token.
type Action struct {
	Ref
	WithSource bool `json:"withSource,omitempty"`
}

// ActionResult answers an Action.
type ActionResult struct {
	Message string `json:"message"`
}

// Change is the data of an SSE "change" event on GET /api/stream: an
// object changed (the page refetches what shows it). An SSE "status" event
// carries Status.
type Change struct {
	Ref
}

// Status is the data of an SSE "status" event: whether the API server is
// reachable.
type Status struct {
	Connected bool   `json:"connected"`
	Message   string `json:"message,omitempty"`
}

// ImageChain is Detail.Image of an image automation kind: the chain
// ImageRepository → ImagePolicy → ImageUpdateAutomation → the commit it
// pushed. Automations are the automations the object is part of (an
// automation: itself; a policy: those that read it; a repository: those
// that read a policy scanning it), each with every policy it reads.
// Policies are the object's policies no automation reads (a policy's page:
// itself; a repository's: the policies scanning it).
type ImageChain struct {
	Automations []ImageAutomation `json:"automations"`
	Policies    []ImagePolicy     `json:"policies,omitempty"`
}

// ImageNode is one object of an ImageChain: its overview row and its
// conditions (Ready, Stalled, Reconciling, an ImagePolicy's MutableTag).
type ImageNode struct {
	Summary    Summary     `json:"summary"`
	Conditions []Condition `json:"conditions"`
}

// ImageRef is an image as a policy selected it: name:tag@digest (digest
// "" when not reflected).
type ImageRef struct {
	Name   string `json:"name"`
	Tag    string `json:"tag"`
	Digest string `json:"digest,omitempty"`
}

// ImageAutomation is an ImageUpdateAutomation in an ImageChain. Its
// policies are those of its namespace its spec.policySelector selects (all
// when unset), as image-automation-controller reads them. SigningKey is
// the name of the Secret of its commit signing key, never its content.
type ImageAutomation struct {
	ImageNode
	SourceRef      Ref           `json:"sourceRef"`        // spec.sourceRef, namespace defaulted
	Source         *ImageNode    `json:"source,omitempty"` // the GitRepository, when readable
	Policies       []ImagePolicy `json:"policies"`
	OtherPolicies  int           `json:"otherPolicies,omitempty"`  // policies it also reads, left out of a policy's or repository's page
	LastRun        *time.Time    `json:"lastRun,omitempty"`        // status.lastAutomationRunTime
	LastPushCommit string        `json:"lastPushCommit,omitempty"` // status.lastPushCommit
	LastPushTime   *time.Time    `json:"lastPushTime,omitempty"`
	Revision       string        `json:"observedSourceRevision,omitempty"`
	PushBranch     string        `json:"pushBranch,omitempty"` // spec.git.push.branch, else the checkout branch
	SigningKey     string        `json:"signingKeySecret,omitempty"`
}

// ImagePolicy is an ImagePolicy in an ImageChain: LatestRef its
// status.latestRef; Observed the ref the automation last wrote for it
// (its status.observedPolicies; nil outside an automation, or not yet);
// Repository the ImageRepository it scans, when readable.
type ImagePolicy struct {
	ImageNode
	LatestRef     *ImageRef        `json:"latestRef,omitempty"`
	Observed      *ImageRef        `json:"observedRef,omitempty"`
	RepositoryRef Ref              `json:"repositoryRef"`
	Repository    *ImageRepository `json:"repository,omitempty"`
}

// ImageRepository is an ImageRepository in an ImageChain: the image it
// scans and its last scan (time, number of tags found; zero before one).
type ImageRepository struct {
	ImageNode
	Image    string     `json:"image"`
	LastScan *time.Time `json:"lastScan,omitempty"`
	TagCount int        `json:"tagCount"`
}
