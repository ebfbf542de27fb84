// Package sopshelper is the SOPS helper's side of package sopswire: it
// decrypts SOPS documents with the getsops/sops library, using the age
// identities (filippo.io/age) and OpenPGP private keys (ProtonMail/go-crypto)
// it is handed in memory, never a GnuPG home or key files on disk, and
// OpenBao/Vault transit, AWS KMS, Azure Key Vault and GCP KMS keys with
// the credentials it is handed or else the SDKs' own (the environment the
// controller passes on).
//
// Messages follow Flux's kustomize-controller ("failed to load encrypted
// JSON data: …", "cannot get sops data key: …", "error decrypting sops
// tree: …") and never hold a decrypted value.
package sopshelper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
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
)

func init() {
	// The sops library logs each data key decryption; nothing of it is
	// needed, and a warning could quote a comment of a decrypted file.
	logging.SetLevel(logrus.PanicLevel)
}

// Serve runs the helper's side of the protocol: it reads a Hello and then
// Requests from in until its end, and writes a Response to each on out.
// It returns nil at the end of in, or the error that stopped it reading
// or writing.
func Serve(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(in))
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	send := func(r sopswire.Response) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return w.Flush()
	}
	var hello sopswire.Hello
	if err := dec.Decode(&hello); err != nil {
		if err == io.EOF {
			return nil
		}
		return fmt.Errorf("reading the keys: %w", err)
	}
	if hello.Version != sopswire.Version {
		// The controller names both versions.
		return send(sopswire.Response{Version: sopswire.Version, Error: "protocol version mismatch"})
	}
	d, key, err := New(hello.Keys)
	if err != nil {
		return send(sopswire.Response{Version: sopswire.Version, Error: err.Error(), Key: key})
	}
	if err := send(sopswire.Response{Version: sopswire.Version}); err != nil {
		return err
	}
	for {
		var req sopswire.Request
		if err := dec.Decode(&req); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		plain, values, err := d.Decrypt(req.Data, req.In, req.Out, req.CheckMAC)
		r := sopswire.Response{Plain: plain}
		for _, v := range values {
			r.Values = append(r.Values, []byte(v))
		}
		if err != nil {
			r = sopswire.Response{Error: err.Error()}
		}
		if err := send(r); err != nil {
			return err
		}
	}
}

// Decryptor decrypts SOPS documents with the keys it was made with.
type Decryptor struct {
	services []keyservice.KeyServiceClient
}

// New imports keys (see sopswire.Key). On failure it returns the name of
// the key that could not be imported with the reason.
func New(keys []sopswire.Key) (*Decryptor, string, error) {
	ks := &keyServer{}
	for _, k := range keys {
		var err error
		switch {
		case path.Ext(k.Name) == sopswire.AgeExt:
			err = ks.age.Import(string(k.Data))
		case path.Ext(k.Name) == sopswire.PGPExt:
			err = ks.importPGP(k.Data)
		case sopswire.Credentials[k.Name] != "":
			err = ks.cloud.importCreds(k.Name, k.Data)
		}
		if err != nil {
			return nil, k.Name, err
		}
	}
	return &Decryptor{services: []keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(ks)}}, "", nil
}

var formatNames = map[formats.Format]string{
	formats.Binary: "binary", formats.Dotenv: "dotenv", formats.Ini: "INI", formats.Json: "JSON", formats.Yaml: "YAML",
}

// StoreFor is the sops store that reads and writes documents of format f
// (binary for any other).
func StoreFor(f formats.Format) sops.Store {
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

// Decrypt decrypts a SOPS document of format in and emits it as out, with
// the plaintext of each value that was encrypted. With checkMAC the
// document's MAC must match its decrypted content.
func (d *Decryptor) Decrypt(data []byte, in, out formats.Format, checkMAC bool) (plain []byte, values []string, err error) {
	defer func() {
		// Malformed input can make sops panic; Flux compatible message.
		if r := recover(); r != nil {
			plain, values, err = nil, nil, fmt.Errorf("failed to emit encrypted %s file as decrypted %s: %v", formatNames[in], formatNames[out], r)
		}
	}()
	tree, err := StoreFor(in).LoadEncryptedFile(data)
	if err != nil {
		if in == formats.Dotenv || in == formats.Ini {
			// The dotenv and INI parsers quote the line they cannot
			// read, which may be a plaintext value (a line added by
			// hand, a continuation line of a pasted key).
			err = fmt.Errorf("malformed %s input (the line is not shown: it may hold a secret)", formatNames[in])
		}
		return nil, nil, userErr(fmt.Sprintf("failed to load encrypted %s data", formatNames[in]), err)
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices(d.services, sops.DefaultDecryptionOrder)
	if err != nil {
		return nil, nil, userErr("cannot get sops data key", err)
	}
	before := leaves(tree.Branches)
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, nil, fmt.Errorf("error decrypting sops tree: %w", redact(err))
	}
	after := leaves(tree.Branches)
	if len(after) == len(before) {
		for i, b := range before {
			if s, ok := b.(string); ok && strings.HasPrefix(s, "ENC[") {
				values = append(values, fmt.Sprint(after[i]))
			}
		}
	}
	if checkMAC {
		want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
		if err != nil {
			return nil, nil, fmt.Errorf("failed to verify sops data integrity: %w", redact(err))
		}
		if want != mac {
			return nil, nil, errMAC
		}
	}
	plain, err = StoreFor(out).EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, nil, userErr(fmt.Sprintf("failed to emit encrypted %s file as decrypted %s", formatNames[in], formatNames[out]), err)
	}
	return plain, values, nil
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

// keyServer is the sops key service that gets a data key with the
// decryption Secret's keys only.
type keyServer struct {
	age   sopsage.ParsedIdentities
	pgp   openpgp.EntityList
	cloud cloudCreds
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
	case *keyservice.Key_VaultKey, *keyservice.Key_KmsKey, *keyservice.Key_AzureKeyvaultKey, *keyservice.Key_GcpKmsKey:
		plain, err = s.cloud.decryptCloud(req.Key, req.Ciphertext)
	default:
		err = fmt.Errorf("%T keys are not supported by Eddy yet", k)
	}
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
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
