package plan

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// NamespaceTask returns the task CreateNamespace=true adds for the
// destination namespace, or nil when none is needed (argocd-contract §1.9,
// §4.2.1). It is nil when namespace is empty or desired (as given to Tasks)
// holds a Namespace of that name, which then wins; also when the namespace
// exists (live not nil) and metadata is nil. Otherwise it is a PreSync task
// applying Namespace <namespace>; with metadata (the Application's
// managedNamespaceMetadata) the Namespace carries its labels and
// annotations plus sync-options ServerSideApply=true, and the task is made
// on every sync, as Argo CD does, so that the metadata is kept. The task is
// not tracked (never pruned). Append it to Tasks' result and Sort again.
func NamespaceTask(namespace string, metadata *argov1.ManagedNamespaceMetadata,
	desired map[string]*unstructured.Unstructured, live *unstructured.Unstructured) *Task {
	if namespace == "" || (live != nil && metadata == nil) {
		return nil
	}
	for _, u := range desired {
		if u != nil && u.GroupVersionKind().Group == "" && u.GetKind() == "Namespace" && u.GetName() == namespace {
			return nil
		}
	}
	ns := &unstructured.Unstructured{Object: map[string]any{}}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	if metadata != nil {
		if len(metadata.Labels) > 0 {
			ns.SetLabels(maps.Clone(metadata.Labels))
		}
		ann := map[string]string{}
		maps.Copy(ann, metadata.Annotations)
		ann[argov1.AnnotationSyncOptions] = "ServerSideApply=true"
		ns.SetAnnotations(ann)
	}
	return &Task{Obj: ns, Live: live, Phase: PhasePreSync}
}
