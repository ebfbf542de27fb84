// Package decryptor decrypts the SOPS-encrypted inputs of a Kustomization's
// build (spec.decryption with provider sops), in memory: the getsops/sops
// library decrypts, with the age identities (filippo.io/age) and OpenPGP
// private keys (ProtonMail/go-crypto) read from the Kustomization's
// decryption Secret. It implements kustomize.Decryptor.
//
// Flux compatible (kustomize-controller internal/decryptor, contract §4.2):
//   - keys: every `*.agekey` entry of the Secret is an age identity file,
//     every `*.asc` entry an armored OpenPGP private key;
//   - before the build, the files secretGenerator and configMapGenerator
//     entries read (files and envs: dotenv, JSON, YAML, INI, binary) and the
//     files of patches are decrypted in the format of their name;
//   - after the build, an object with a top-level `sops` is decrypted whole,
//     and a Secret's data and stringData values that hold a SOPS document are
//     decrypted in the format of their key;
//   - the annotation `kustomize.toolkit.fluxcd.io/decrypt: disabled` leaves
//     an object as it is;
//   - errors read `decryption failed for '<Kind/namespace/name>': …`.
//
// Unlike Flux, a resource file is decrypted as kustomize reads it, before
// the build rather than after, so the SOPS MAC is checked against the file
// as sops wrote it (Flux skips the check as kustomize changes the object)
// and comment-regex files keep their comments. Nothing decrypted is written
// to disk: the build's filesystem is in memory.
package decryptor

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/logging"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Flux compatible names.
const (
	// ProviderSOPS is the only decryption provider.
	ProviderSOPS = "sops"
	// PGPExt ends a decryption Secret key holding an armored OpenPGP key.
	PGPExt = ".asc"
	// AgeExt ends a decryption Secret key holding age identities.
	AgeExt = ".agekey"
	// DisabledAnnotation set to "disabled" leaves an object undecrypted.
	DisabledAnnotation = "kustomize.toolkit.fluxcd.io/decrypt"
	// MaxFileSize is the largest encrypted file decrypted (Flux: 5 MiB).
	MaxFileSize = 5 << 20
)

// unsupportedKeys are the decryption Secret keys Flux reads for key
// management services Eddy does not reach yet.
var unsupportedKeys = map[string]string{
	"sops.vault-token": "OpenBao/Vault transit",
	"sops.aws-kms":     "AWS KMS",
	"sops.azure-kv":    "Azure Key Vault",
	"sops.gcp-kms":     "GCP KMS",
}

func init() {
	// The sops library logs each data key decryption; nothing of it is
	// needed, and a warning could quote a comment of a decrypted file.
	logging.SetLevel(logrus.PanicLevel)
}

// Decryptor decrypts for one Kustomization's build. It is safe for the
// build's concurrent use.
type Decryptor struct {
	obj      *kustomizev1.Kustomization
	services []keyservice.KeyServiceClient

	mu     sync.Mutex
	values map[string]struct{}
}

// New reads the keys of obj's spec.decryption.secretRef (a Secret in obj's
// namespace). Flux compatible messages: "failed to import '<key>' data from
// sops decryption Secret '<ns>/<name>': …"; the Secret's NotFound error as
// it is.
func New(ctx context.Context, c client.Reader, obj *kustomizev1.Kustomization) (*Decryptor, error) {
	ks := &keyServer{unsupported: map[string]string{}}
	dec := obj.Spec.Decryption
	if dec != nil && dec.Provider != "" && dec.Provider != ProviderSOPS {
		return nil, fmt.Errorf("decryption provider '%s' is not supported", dec.Provider)
	}
	if dec != nil && dec.SecretRef != nil {
		key := types.NamespacedName{Namespace: obj.Namespace, Name: dec.SecretRef.Name}
		var secret corev1.Secret
		if err := c.Get(ctx, key, &secret); err != nil {
			return nil, err
		}
		names := make([]string, 0, len(secret.Data))
		for name := range secret.Data {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			value := secret.Data[name]
			var err error
			switch {
			case path.Ext(name) == AgeExt:
				err = ks.age.Import(string(value))
			case path.Ext(name) == PGPExt:
				err = ks.importPGP(value)
			case unsupportedKeys[name] != "":
				ks.unsupported[name] = unsupportedKeys[name]
			}
			if err != nil {
				return nil, fmt.Errorf("failed to import '%s' data from %s decryption Secret '%s': %w", name, ProviderSOPS, key, err)
			}
		}
	}
	return &Decryptor{
		obj:      obj,
		services: []keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(ks)},
		values:   map[string]struct{}{},
	}, nil
}

// Values returns the plaintext values decrypted so far (and the base64
// decoding of those that are base64), for masking in messages. Values
// shorter than four characters are left out: masking them would garble a
// message more than it hides.
func (d *Decryptor) Values() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.values))
	for v := range d.values {
		out = append(out, v)
	}
	// Longest first, so a value containing another is masked whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func (d *Decryptor) remember(v string) {
	v = strings.TrimSpace(v)
	if len(v) < 4 {
		return
	}
	d.mu.Lock()
	d.values[v] = struct{}{}
	d.mu.Unlock()
	if b, err := base64.StdEncoding.DecodeString(v); err == nil && len(b) >= 4 {
		d.mu.Lock()
		d.values[string(b)] = struct{}{}
		d.mu.Unlock()
	}
}

// markers tell that data holds a SOPS document of a format. Flux
// compatible; checked in this order (a JSON marker also stands for the
// binary format, whose encrypted form is a JSON envelope).
var markers = []struct {
	format formats.Format
	marker []byte
}{
	{formats.Ini, []byte("[sops]")},
	{formats.Dotenv, []byte("sops_mac=ENC[")},
	{formats.Yaml, []byte("mac: ENC[")},
	{formats.Json, []byte(`"mac": "ENC[`)},
}

const unknownFormat = formats.Format(-1)

func detectFormat(data []byte) formats.Format {
	for _, m := range markers {
		if bytes.Contains(data, m.marker) {
			return m.format
		}
	}
	return unknownFormat
}

func markerOf(f formats.Format) []byte {
	if f == formats.Binary {
		f = formats.Json
	}
	for _, m := range markers {
		if m.format == f {
			return m.marker
		}
	}
	return nil
}

var formatNames = map[formats.Format]string{
	formats.Binary: "binary", formats.Dotenv: "dotenv", formats.Ini: "INI", formats.Json: "JSON", formats.Yaml: "YAML",
}

// formatForPath is sops' format for a file name; Flux compatible: a
// .dockerconfigjson key is JSON.
func formatForPath(p string) formats.Format {
	if strings.HasSuffix(p, corev1.DockerConfigJsonKey) {
		return formats.Json
	}
	return formats.FormatForPath(p)
}

type store interface {
	LoadEncryptedFile(in []byte) (sops.Tree, error)
	EmitPlainFile(in sops.TreeBranches) ([]byte, error)
}

func storeFor(f formats.Format) store {
	switch f {
	case formats.Yaml:
		return sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case formats.Json:
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	case formats.Dotenv:
		return dotenv.NewStore(&config.DotenvStoreConfig{})
	case formats.Ini:
		return ini.NewStore(&config.INIStoreConfig{})
	default:
		return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
	}
}

// errMAC is the integrity failure; its text shows neither MAC (a MAC is a
// hash of the plaintext).
var errMAC = errors.New("failed to verify sops data integrity: MAC mismatch")

// decrypt decrypts a SOPS document of format in and emits it as out. With
// checkMAC the document's MAC must match its decrypted content. Messages
// follow Flux's ("failed to load encrypted JSON data: …", "cannot get sops
// data key: …", "error decrypting sops tree: …") and never hold a value.
func (d *Decryptor) decrypt(data []byte, in, out formats.Format, checkMAC bool) (plain []byte, err error) {
	defer func() {
		// Malformed input can make sops panic; Flux compatible message.
		if r := recover(); r != nil {
			plain, err = nil, fmt.Errorf("failed to emit encrypted %s file as decrypted %s: %v", formatNames[in], formatNames[out], r)
		}
	}()
	tree, err := storeFor(in).LoadEncryptedFile(data)
	if err != nil {
		if in == formats.Dotenv || in == formats.Ini {
			// The dotenv and INI parsers quote the line they cannot
			// read, which may be a plaintext value (a line added by
			// hand, a continuation line of a pasted key).
			err = fmt.Errorf("malformed %s input (the line is not shown: it may hold a secret)", formatNames[in])
		}
		return nil, userErr(fmt.Sprintf("failed to load encrypted %s data", formatNames[in]), err)
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices(d.services, sops.DefaultDecryptionOrder)
	if err != nil {
		return nil, userErr("cannot get sops data key", err)
	}
	before := leaves(tree.Branches)
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, fmt.Errorf("error decrypting sops tree: %w", redact(err))
	}
	after := leaves(tree.Branches)
	if len(after) == len(before) {
		for i, b := range before {
			if s, ok := b.(string); ok && strings.HasPrefix(s, "ENC[") {
				d.remember(fmt.Sprint(after[i]))
			}
		}
	}
	if checkMAC {
		want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
		if err != nil {
			return nil, fmt.Errorf("failed to verify sops data integrity: %w", redact(err))
		}
		if want != mac {
			return nil, errMAC
		}
	}
	plain, err = storeFor(out).EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, userErr(fmt.Sprintf("failed to emit encrypted %s file as decrypted %s", formatNames[in], formatNames[out]), err)
	}
	return plain, nil
}

// leaves lists a tree's leaf values in walk order (comments left out).
func leaves(branches sops.TreeBranches) []any {
	var out []any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case sops.TreeBranch:
			for _, item := range v {
				if _, ok := item.Key.(sops.Comment); ok {
					continue
				}
				walk(item.Value)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case sops.Comment:
		default:
			out = append(out, v)
		}
	}
	for _, b := range branches {
		walk(b)
	}
	return out
}

func userErr(msg string, err error) error {
	var ue sops.UserError
	if errors.As(err, &ue) {
		err = errors.New(ue.UserError())
	}
	return fmt.Errorf("%s: %w", msg, redact(err))
}

// redact hides the input sops quotes in "Input string <value> does not
// match sops' data format" (Flux compatible: "<redacted>").
func redact(err error) error {
	const prefix, suffix = "Input string ", " does not match sops' data format"
	e := err.Error()
	i, j := strings.Index(e, prefix), strings.Index(e, suffix)
	if i < 0 || j < i {
		return err
	}
	return errors.New(e[:i] + prefix + "<redacted>" + e[j:])
}

func disabled(annotations map[string]string) bool {
	return strings.EqualFold(annotations[DisabledAnnotation], kustomizev1.DisabledValue)
}

// objectName is Kind/namespace/name, the namespace defaulting to the
// Kustomization's targetNamespace.
func (d *Decryptor) objectName(kind, namespace, name string) string {
	if namespace == "" {
		namespace = d.obj.Spec.TargetNamespace
	}
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// DecryptFile decrypts a YAML or JSON resource file holding a document
// with a top-level `sops` (with a MAC), checking its MAC; other files are
// left (nil). Every document of the file names the same sops metadata, as
// sops writes it.
func (d *Decryptor) DecryptFile(p string, data []byte) ([]byte, error) {
	var f formats.Format
	switch path.Ext(p) {
	case ".yaml", ".yml":
		f = formats.Yaml
	case ".json":
		f = formats.Json
	default:
		return nil, nil
	}
	if !bytes.Contains(data, markerOf(f)) {
		return nil, nil
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var id string
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				break
			}
			return nil, nil // not Kubernetes YAML: kustomize says so
		}
		if !isEncrypted(doc) {
			continue
		}
		u := unstructured.Unstructured{Object: doc}
		if disabled(u.GetAnnotations()) {
			return nil, nil
		}
		if id == "" {
			id = d.objectName(u.GetKind(), u.GetNamespace(), u.GetName())
		}
	}
	if id == "" {
		return nil, nil
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("decryption failed for '%s': cannot decrypt file with size (%d bytes) exceeding limit (%d)", id, len(data), MaxFileSize)
	}
	out, err := d.decrypt(data, f, f, true)
	if err != nil {
		return nil, fmt.Errorf("decryption failed for '%s': %w", id, err)
	}
	return out, nil
}

// isEncrypted tells a document with a top-level sops MAC (Flux: a SOPS
// encrypted resource).
func isEncrypted(doc map[string]any) bool {
	s, ok := doc["sops"].(map[string]any)
	if !ok {
		return false
	}
	mac, _ := s["mac"].(string)
	return mac != ""
}

// DecryptObject decrypts a built object: whole when it has a top-level
// sops (the MAC is not checked: kustomize changed the object, as in Flux),
// else a Secret's data and stringData values that hold SOPS documents.
func (d *Decryptor) DecryptObject(u *unstructured.Unstructured) error {
	if disabled(u.GetAnnotations()) {
		return nil
	}
	id := d.objectName(u.GetKind(), u.GetNamespace(), u.GetName())
	if isEncrypted(u.Object) {
		js, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		out, err := d.decrypt(js, formats.Json, formats.Json, false)
		if err != nil {
			return fmt.Errorf("decryption failed for '%s': failed to decrypt and format '%s/%s' %s data: %w", id, u.GetNamespace(), u.GetName(), u.GetKind(), err)
		}
		if err := u.UnmarshalJSON(out); err != nil {
			return fmt.Errorf("decryption failed for '%s': failed to unmarshal decrypted '%s/%s' %s to JSON: %w", id, u.GetNamespace(), u.GetName(), u.GetKind(), err)
		}
		return nil
	}
	if u.GetKind() != "Secret" || u.GetAPIVersion() != "v1" {
		return nil
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := u.Object[field].(map[string]any)
		if !ok {
			continue
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := m[k].(string)
			if !ok {
				continue
			}
			data := []byte(s)
			if field == "data" {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					continue // Flux compatible: the apply reports it
				}
				data = b
			}
			in := detectFormat(data)
			if in == unknownFormat {
				continue
			}
			out, err := d.decrypt(data, in, formatForPath(k), false)
			if err != nil {
				return fmt.Errorf("decryption failed for '%s': failed to decrypt and format '%s/%s' Secret field '%s': %w", id, u.GetNamespace(), u.GetName(), k, err)
			}
			d.remember(string(out))
			if field == "data" {
				m[k] = base64.StdEncoding.EncodeToString(out)
			} else {
				m[k] = string(out)
			}
		}
	}
	return nil
}

// DecryptSources decrypts, in fs, the files read by the generators and
// patches of the kustomization at dir and of the kustomizations it reaches
// through resources and components. A file without the SOPS marker of its
// format is left as it is. Flux compatible formats: a generator file's is
// that of its key, an env file's that of its name (dotenv when unknown).
func (d *Decryptor) DecryptSources(fs filesys.FileSystem, dir string) error {
	done := map[string]bool{}
	return d.sources(fs, path.Clean("/"+dir), map[string]bool{}, done)
}

func (d *Decryptor) sources(fs filesys.FileSystem, dir string, visited, done map[string]bool) error {
	if visited[dir] || !fs.IsDir(dir) {
		return nil
	}
	visited[dir] = true
	var kfile string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if p := path.Join(dir, n); fs.Exists(p) && !fs.IsDir(p) {
			kfile = p
			break
		}
	}
	if kfile == "" {
		return nil
	}
	data, err := fs.ReadFile(kfile)
	if err != nil {
		return err
	}
	var kus kustypes.Kustomization
	if err := yaml.Unmarshal(data, &kus); err != nil {
		return nil // kustomize reports it
	}
	file := func(id, p string, f formats.Format) error {
		if strings.Contains(p, "://") {
			return nil
		}
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
		p = path.Clean(p)
		if done[p] || !fs.Exists(p) || fs.IsDir(p) {
			return nil
		}
		data, err := fs.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, markerOf(f)) {
			return nil
		}
		if len(data) > MaxFileSize {
			return fmt.Errorf("decryption failed for '%s': cannot decrypt file with size (%d bytes) exceeding limit (%d)", id, len(data), MaxFileSize)
		}
		out, err := d.decrypt(data, f, f, true)
		if err != nil {
			return fmt.Errorf("decryption failed for '%s': failed to decrypt '%s': %w", id, strings.TrimPrefix(p, "/"), err)
		}
		d.remember(string(out))
		done[p] = true
		return fs.WriteFile(p, out)
	}
	gens := func(kind string, args []kustypes.GeneratorArgs) error {
		for _, g := range args {
			ns := g.Namespace
			if ns == "" {
				ns = kus.Namespace
			}
			id := d.objectName(kind, ns, g.Name)
			for _, src := range g.FileSources {
				key, p, ok := strings.Cut(src, "=")
				if !ok {
					p = key
				}
				if err := file(id, p, formatForPath(key)); err != nil {
					return err
				}
			}
			for _, env := range g.EnvSources {
				f := formatForPath(env)
				if f == formats.Binary {
					f = formats.Dotenv
				}
				if err := file(id, env, f); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var secrets, configMaps []kustypes.GeneratorArgs
	for _, g := range kus.SecretGenerator {
		secrets = append(secrets, g.GeneratorArgs)
	}
	for _, g := range kus.ConfigMapGenerator {
		configMaps = append(configMaps, g.GeneratorArgs)
	}
	if err := gens("Secret", secrets); err != nil {
		return err
	}
	if err := gens("ConfigMap", configMaps); err != nil {
		return err
	}
	for _, p := range kus.Patches {
		if p.Path == "" {
			continue
		}
		if err := file("patch "+p.Path, p.Path, formatForPath(p.Path)); err != nil {
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
		if err := d.sources(fs, path.Clean(r), visited, done); err != nil {
			return err
		}
	}
	return nil
}

// keyServer is the sops key service that gets a data key with the
// decryption Secret's keys only: never the process environment, a GnuPG
// home or files on disk.
type keyServer struct {
	age         sopsage.ParsedIdentities
	pgp         openpgp.EntityList
	unsupported map[string]string
}

var _ keyservice.KeyServiceServer = (*keyServer)(nil)

func (s *keyServer) importPGP(armored []byte) error {
	list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return err
	}
	for _, e := range list {
		if e.PrivateKey == nil {
			return fmt.Errorf("key %X has no private key", e.PrimaryKey.Fingerprint)
		}
	}
	s.pgp = append(s.pgp, list...)
	return nil
}

func (s *keyServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encryption is not supported")
}

func (s *keyServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	var plain []byte
	var err error
	switch k := req.Key.KeyType.(type) {
	case *keyservice.Key_AgeKey:
		plain, err = s.decryptAge(k.AgeKey.Recipient, req.Ciphertext)
	case *keyservice.Key_PgpKey:
		plain, err = s.decryptPGP(req.Ciphertext)
	case *keyservice.Key_VaultKey:
		err = s.refuse("OpenBao/Vault transit")
	case *keyservice.Key_KmsKey:
		err = s.refuse("AWS KMS")
	case *keyservice.Key_AzureKeyvaultKey:
		err = s.refuse("Azure Key Vault")
	case *keyservice.Key_GcpKmsKey:
		err = s.refuse("GCP KMS")
	default:
		err = fmt.Errorf("%T keys are not supported by Eddy yet", k)
	}
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

func (s *keyServer) refuse(kms string) error {
	for name, k := range s.unsupported {
		if k == kms {
			return fmt.Errorf("%s keys are not supported by Eddy yet: the decryption Secret's '%s' is not used (only its age and OpenPGP keys)", kms, name)
		}
	}
	return fmt.Errorf("%s keys are not supported by Eddy yet (only age and OpenPGP keys of the decryption Secret)", kms)
}

func (s *keyServer) decryptAge(recipient string, ciphertext []byte) ([]byte, error) {
	if len(s.age) == 0 {
		return nil, errors.New("no age identity ('*.agekey') in the decryption Secret")
	}
	mk := &sopsage.MasterKey{Recipient: recipient, EncryptedKey: string(ciphertext)}
	s.age.ApplyToMasterKey(mk)
	return mk.Decrypt()
}

func (s *keyServer) decryptPGP(ciphertext []byte) ([]byte, error) {
	if len(s.pgp) == 0 {
		return nil, errors.New("no OpenPGP private key ('*.asc') in the decryption Secret")
	}
	block, err := armor.Decode(bytes.NewReader(ciphertext))
	if err != nil {
		return nil, fmt.Errorf("armor decoding failed: %w", err)
	}
	md, err := openpgp.ReadMessage(block.Body, s.pgp, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("reading PGP message failed: %w", err)
	}
	return io.ReadAll(md.UnverifiedBody)
}
