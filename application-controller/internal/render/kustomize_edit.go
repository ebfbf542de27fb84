package render

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"
)

// editKustomization applies the source's kustomize overrides to the
// kustomization file kfile of dir on fsys (an in-memory copy), in Argo CD's
// order and with `kustomize edit`'s effect (argocd-contract §1.5):
// namePrefix, nameSuffix, images, replicas, commonLabels ($ARGOCD_APP_*
// expanded; labelWithoutSelector and labelIncludeTemplates write a
// `labels` entry), commonAnnotations (expanded only with
// commonAnnotationsEnvsubst), namespace, patches appended, components
// added (absent ones skipped with ignoreMissingComponents). Without
// force*, a label or annotation key the kustomization already sets is the
// error "label '<k>' already in kustomization file".
func editKustomization(fsys filesys.FileSystem, kfile, dir string, o *argov1.ApplicationSourceKustomize, vars map[string]string) error {
	data, err := fsys.ReadFile(kfile)
	if err != nil {
		return err
	}
	var k kustypes.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %s", kfile[1:], err)
	}
	if o.NamePrefix != "" {
		k.NamePrefix = o.NamePrefix
	}
	if o.NameSuffix != "" {
		k.NameSuffix = o.NameSuffix
	}
	for _, s := range o.Images {
		k.Images = setImage(k.Images, parseImage(envsubst(s, vars)))
	}
	if err := setReplicas(&k, o.Replicas); err != nil {
		return err
	}
	if err := addLabels(&k, o, vars); err != nil {
		return err
	}
	if err := addAnnotations(&k, o, vars); err != nil {
		return err
	}
	if o.Namespace != "" {
		k.Namespace = o.Namespace
	}
	for _, p := range o.Patches {
		k.Patches = append(k.Patches, patchOf(p))
	}
	for _, c := range o.Components {
		if !fsys.Exists(path.Join(dir, c)) {
			if o.IgnoreMissingComponents {
				continue
			}
			return fmt.Errorf("kustomize component '%s' does not exist", c)
		}
		if !slices.Contains(k.Components, c) {
			k.Components = append(k.Components, c)
		}
	}
	out, err := yaml.Marshal(&k)
	if err != nil {
		return err
	}
	return fsys.WriteFile(kfile, out)
}

// parseImage reads `kustomize edit set image`'s argument
// `[old=]name[:tag][@digest]`: without "old=", name is the image matched
// and only tag and digest change.
func parseImage(s string) kustypes.Image {
	old, ref, renamed := strings.Cut(s, "=")
	if !renamed {
		ref = s
	}
	var img kustypes.Image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref, img.Digest = ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref, img.NewTag = ref[:i], ref[i+1:]
	}
	if renamed {
		img.Name, img.NewName = old, ref
	} else {
		img.Name = ref
	}
	return img
}

// setImage sets img in images: an entry of the same name is replaced,
// keeping the values img gives as "*", as `kustomize edit set image` does.
func setImage(images []kustypes.Image, img kustypes.Image) []kustypes.Image {
	i := slices.IndexFunc(images, func(e kustypes.Image) bool { return e.Name == img.Name })
	if i < 0 {
		return append(images, img)
	}
	if img.NewName == "*" {
		img.NewName = images[i].NewName
	}
	if img.NewTag == "*" {
		img.NewTag = images[i].NewTag
	}
	images[i] = img
	return images
}

// setReplicas is `kustomize edit set replicas name=count`; a count that is
// not an integer is an error.
func setReplicas(k *kustypes.Kustomization, replicas []argov1.KustomizeReplica) error {
	for _, r := range replicas {
		n := int64(r.Count.IntVal)
		if r.Count.Type == intstr.String {
			v, err := strconv.ParseInt(r.Count.StrVal, 10, 64)
			if err != nil {
				return fmt.Errorf("expected integer value for count. Received: %s", r.Count.StrVal)
			}
			n = v
		}
		i := slices.IndexFunc(k.Replicas, func(e kustypes.Replica) bool { return e.Name == r.Name })
		if i < 0 {
			k.Replicas = append(k.Replicas, kustypes.Replica{Name: r.Name, Count: n})
		} else {
			k.Replicas[i].Count = n
		}
	}
	return nil
}

// addLabels is `kustomize edit add label`, with --force,
// --without-selector and --include-templates as the block says; values
// are $ARGOCD_APP_* expanded.
func addLabels(k *kustypes.Kustomization, o *argov1.ApplicationSourceKustomize, vars map[string]string) error {
	if len(o.CommonLabels) == 0 {
		return nil
	}
	labels := map[string]string{}
	for key, v := range o.CommonLabels {
		labels[key] = envsubst(v, vars)
	}
	if !o.LabelWithoutSelector {
		if k.CommonLabels == nil {
			k.CommonLabels = map[string]string{}
		}
		return addPairs(k.CommonLabels, labels, o.ForceCommonLabels, "label")
	}
	for i := range k.Labels {
		l := &k.Labels[i]
		if !l.IncludeSelectors && l.IncludeTemplates == o.LabelIncludeTemplates && len(l.FieldSpecs) == 0 {
			if l.Pairs == nil {
				l.Pairs = map[string]string{}
			}
			return addPairs(l.Pairs, labels, o.ForceCommonLabels, "label")
		}
	}
	l := kustypes.Label{Pairs: map[string]string{}, IncludeTemplates: o.LabelIncludeTemplates}
	if err := addPairs(l.Pairs, labels, o.ForceCommonLabels, "label"); err != nil {
		return err
	}
	k.Labels = append(k.Labels, l)
	return nil
}

// addAnnotations is `kustomize edit add annotation` (--force with
// forceCommonAnnotations); values are expanded only with
// commonAnnotationsEnvsubst.
func addAnnotations(k *kustypes.Kustomization, o *argov1.ApplicationSourceKustomize, vars map[string]string) error {
	if len(o.CommonAnnotations) == 0 {
		return nil
	}
	ann := map[string]string{}
	for key, v := range o.CommonAnnotations {
		if o.CommonAnnotationsEnvsubst {
			v = envsubst(v, vars)
		}
		ann[key] = v
	}
	if k.CommonAnnotations == nil {
		k.CommonAnnotations = map[string]string{}
	}
	return addPairs(k.CommonAnnotations, ann, o.ForceCommonAnnotations, "annotation")
}

// addPairs adds add to dst in key order; without force a key dst already
// has is an error.
func addPairs(dst, add map[string]string, force bool, what string) error {
	keys := make([]string, 0, len(add))
	for key := range add {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if _, ok := dst[key]; ok && !force {
			return fmt.Errorf("%s '%s' already in kustomization file", what, key)
		}
		dst[key] = add[key]
	}
	return nil
}

// patchOf is a source patch as a kustomization patch.
func patchOf(p argov1.KustomizePatch) kustypes.Patch {
	kp := kustypes.Patch{Path: p.Path, Patch: p.Patch}
	if t := p.Target; t != nil {
		kp.Target = &kustypes.Selector{
			ResId: resid.ResId{
				Gvk:  resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
				Name: t.Name, Namespace: t.Namespace,
			},
			AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
		}
	}
	if len(p.Options) > 0 {
		var args kustypes.PatchArgs
		if js, err := json.Marshal(p.Options); err == nil && json.Unmarshal(js, &args) == nil {
			kp.Options = &args
		}
	}
	return kp
}
