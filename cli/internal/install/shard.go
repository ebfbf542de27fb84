package install

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eddyops/eddy/cli/internal/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ShardLabel is the label an object carries to be reconciled by one shard
// (Flux's sharding key); the value is the shard's name.
const ShardLabel = status.ShardLabel

// ShardedComponents are the controllers that get a Deployment per shard;
// notification-controller is not sharded.
var ShardedComponents = []string{"source-controller", "kustomize-controller", "helm-controller"}

// maxShardLen keeps <controller>-<shard> a valid label value and Service
// name (63 characters) for the longest controller name,
// "kustomize-controller-".
const maxShardLen = 63 - len("kustomize-controller-")

// UnshardedSelector is the --watch-label-selector of the main controllers
// when there are shards: every object without a shard label.
const UnshardedSelector = "!" + ShardLabel

// ShardSelector is the --watch-label-selector of a shard's controllers.
func ShardSelector(shard string) string {
	return fmt.Sprintf("%s in (%s)", ShardLabel, shard)
}

// ValidateShards checks shard names: each a DNS label short enough for
// <controller>-<shard>, none repeated. Errors name --shards and the fix.
func ValidateShards(shards []string) error {
	seen := map[string]bool{}
	for _, s := range shards {
		if s == "" {
			return fmt.Errorf("--shards has an empty shard name: want comma-separated names such as --shards=a,b,c")
		}
		if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
			return fmt.Errorf("--shards %q is not a valid shard name: %s", s, errs[0])
		}
		if len(s) > maxShardLen {
			return fmt.Errorf("--shards %q is too long: at most %d characters, so that kustomize-controller-<shard> is a valid name", s, maxShardLen)
		}
		if seen[s] {
			return fmt.Errorf("--shards %q is given twice: each shard name must be unique", s)
		}
		seen[s] = true
	}
	return nil
}

// addShards inserts, after each sharded controller's Deployment, one copy
// per shard, and after source-controller's Service one Service per shard;
// the main Deployments get the selector that leaves labelled objects to the
// shards. Without shards objs is returned as is.
func addShards(objs []*unstructured.Unstructured, o Options) ([]*unstructured.Unstructured, error) {
	if len(o.Shards) == 0 {
		return objs, nil
	}
	out := make([]*unstructured.Unstructured, 0, len(objs)+len(o.Shards)*4)
	for _, u := range objs {
		out = append(out, u)
		c := u.GetName()
		if !slices.Contains(ShardedComponents, c) {
			continue
		}
		switch u.GetKind() {
		case "Deployment":
			for _, shard := range o.Shards {
				d, err := shardDeployment(u, c, shard, o)
				if err != nil {
					return nil, err
				}
				out = append(out, d)
			}
			if err := appendArgs(u, "--watch-label-selector="+UnshardedSelector); err != nil {
				return nil, err
			}
		case "Service":
			for _, shard := range o.Shards {
				out = append(out, shardService(u, c+"-"+shard))
			}
		}
	}
	return out, nil
}

// shardDeployment is a copy of the controller's Deployment named
// <controller>-<shard>, its pods labelled app=<controller>-<shard> (so that
// a shard's Service selects only its pods), reconciling the shard's
// objects; a source-controller shard advertises its own Service.
func shardDeployment(main *unstructured.Unstructured, c, shard string, o Options) (*unstructured.Unstructured, error) {
	name := c + "-" + shard
	d := main.DeepCopy()
	d.SetName(name)
	if err := unstructured.SetNestedStringMap(d.Object, map[string]string{"app": name}, "spec", "selector", "matchLabels"); err != nil {
		return nil, err
	}
	podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	podLabels["app"] = name
	if err := unstructured.SetNestedStringMap(d.Object, podLabels, "spec", "template", "metadata", "labels"); err != nil {
		return nil, err
	}
	args, err := containerArgs(d)
	if err != nil {
		return nil, err
	}
	if c == "source-controller" {
		for i, a := range args {
			if strings.HasPrefix(a, "--storage-adv-addr=") {
				args[i] = fmt.Sprintf("--storage-adv-addr=%s.$(RUNTIME_NAMESPACE).svc.%s.", name, o.ClusterDomain)
			}
		}
	}
	args = append(args, "--watch-label-selector="+ShardSelector(shard))
	return d, setManagerArgs(d, args)
}

// shardService is a copy of source-controller's Service named and
// selecting the shard's pods.
func shardService(main *unstructured.Unstructured, name string) *unstructured.Unstructured {
	s := main.DeepCopy()
	s.SetName(name)
	_ = unstructured.SetNestedStringMap(s.Object, map[string]string{"app": name}, "spec", "selector")
	return s
}

func appendArgs(d *unstructured.Unstructured, extra ...string) error {
	args, err := containerArgs(d)
	if err != nil {
		return err
	}
	return setManagerArgs(d, append(args, extra...))
}

// containerArgs returns the args of the Deployment's manager container.
func containerArgs(d *unstructured.Unstructured) ([]string, error) {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		m, ok := c.(map[string]any)
		if !ok || m["name"] != "manager" {
			continue
		}
		var args []string
		list, _ := m["args"].([]any)
		for _, a := range list {
			args = append(args, fmt.Sprint(a))
		}
		return args, nil
	}
	return nil, fmt.Errorf("Deployment %s has no manager container", d.GetName())
}

func setManagerArgs(d *unstructured.Unstructured, args []string) error {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
			list := make([]any, len(args))
			for i, a := range args {
				list[i] = a
			}
			m["args"] = list
		}
	}
	return unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers")
}
