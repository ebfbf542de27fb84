package decryptor

import (
	"fmt"
	"path"
	"strings"

	"github.com/getsops/sops/v3/cmd/sops/formats"
	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// DecryptSources decrypts, in fs, the files read by the generators and
// patches of the kustomization at dir and of the kustomizations it reaches
// through resources and components. A file without the SOPS marker of its
// format is left as it is. Flux compatible formats: a generator file's is
// that of its key, an env file's that of its name (dotenv when unknown).
func (d *Decryptor) DecryptSources(fs filesys.FileSystem, dir string) error {
	w := &sourceWalk{d: d, fs: fs, visited: map[string]bool{}, done: map[string]bool{}}
	return w.dir(path.Clean("/" + dir))
}

// sourceWalk is one DecryptSources: the kustomization directories visited
// and the files decrypted so far.
type sourceWalk struct {
	d             *Decryptor
	fs            filesys.FileSystem
	visited, done map[string]bool
}

// dir decrypts the files of the kustomization at dir, then of those its
// resources and components name.
func (w *sourceWalk) dir(dir string) error {
	if w.visited[dir] || !w.fs.IsDir(dir) {
		return nil
	}
	w.visited[dir] = true
	kus, err := w.kustomization(dir)
	if kus == nil || err != nil {
		return err
	}
	var secrets, configMaps []kustypes.GeneratorArgs
	for _, g := range kus.SecretGenerator {
		secrets = append(secrets, g.GeneratorArgs)
	}
	for _, g := range kus.ConfigMapGenerator {
		configMaps = append(configMaps, g.GeneratorArgs)
	}
	if err := w.generators(dir, "Secret", kus.Namespace, secrets); err != nil {
		return err
	}
	if err := w.generators(dir, "ConfigMap", kus.Namespace, configMaps); err != nil {
		return err
	}
	for _, p := range kus.Patches {
		if p.Path == "" {
			continue
		}
		if err := w.file(dir, "patch "+p.Path, p.Path, formatForPath(p.Path)); err != nil {
			return err
		}
	}
	for _, r := range append(kus.Resources, kus.Components...) {
		if strings.Contains(r, "://") {
			continue
		}
		if !path.IsAbs(r) {
			r = path.Join(dir, r)
		}
		if err := w.dir(path.Clean(r)); err != nil {
			return err
		}
	}
	return nil
}

// kustomization reads the kustomization file of dir: nil when there is
// none or it does not parse (kustomize reports it).
func (w *sourceWalk) kustomization(dir string) (*kustypes.Kustomization, error) {
	var kfile string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if p := path.Join(dir, n); w.fs.Exists(p) && !w.fs.IsDir(p) {
			kfile = p
			break
		}
	}
	if kfile == "" {
		return nil, nil
	}
	data, err := w.fs.ReadFile(kfile)
	if err != nil {
		return nil, err
	}
	var kus kustypes.Kustomization
	if err := yaml.Unmarshal(data, &kus); err != nil {
		return nil, nil
	}
	return &kus, nil
}

// generators decrypts the files and env files of the generators args of
// kind, whose namespace defaults to ns.
func (w *sourceWalk) generators(dir, kind, ns string, args []kustypes.GeneratorArgs) error {
	for _, g := range args {
		gns := g.Namespace
		if gns == "" {
			gns = ns
		}
		id := w.d.objectName(kind, gns, g.Name)
		for _, src := range g.FileSources {
			key, p, ok := strings.Cut(src, "=")
			if !ok {
				p = key
			}
			if err := w.file(dir, id, p, formatForPath(key)); err != nil {
				return err
			}
		}
		for _, env := range g.EnvSources {
			f := formatForPath(env)
			if f == formats.Binary {
				f = formats.Dotenv
			}
			if err := w.file(dir, id, env, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// file decrypts, in place, the file p (relative to dir) of the object id
// when it holds the SOPS marker of format f, checking its MAC; a remote,
// missing or already decrypted file is left.
func (w *sourceWalk) file(dir, id, p string, f formats.Format) error {
	if strings.Contains(p, "://") {
		return nil
	}
	if !path.IsAbs(p) {
		p = path.Join(dir, p)
	}
	p = path.Clean(p)
	if w.done[p] || !w.fs.Exists(p) || w.fs.IsDir(p) {
		return nil
	}
	data, err := w.fs.ReadFile(p)
	if err != nil {
		return err
	}
	if !hasMarker(data, f) {
		return nil
	}
	if len(data) > MaxFileSize {
		return fmt.Errorf("decryption failed for '%s': cannot decrypt file with size (%d bytes) exceeding limit (%d)", id, len(data), MaxFileSize)
	}
	out, err := w.d.decrypt(data, f, f, true)
	if err != nil {
		return fmt.Errorf("decryption failed for '%s': failed to decrypt '%s': %w", id, strings.TrimPrefix(p, "/"), err)
	}
	w.d.remember(string(out))
	w.done[p] = true
	return w.fs.WriteFile(p, out)
}
