package source

import (
	"errors"
	"regexp"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/eddyops/eddy/image-automation-controller/internal/update"
)

// DefaultMessage is the commit message when no messageTemplate is set
// (Flux's default).
const DefaultMessage = "Update from image update automation"

// TemplateData is what a git.commit.messageTemplate sees: Flux's fields.
// `{{ .AutomationObject }}` prints `namespace/name`; `.Changed` has
// FileChanges, Changes, Objects and Summary (update.Result); `.Values` is
// git.commit.messageTemplateValues.
type TemplateData struct {
	AutomationObject types.NamespacedName
	Changed          update.Result
	Values           map[string]string
}

// ErrRemovedTemplateField is a template using a field Flux removed
// (`.Updated`, `.Changed.ImageResult`); Flux stalls such an automation
// (reason RemovedTemplateField) rather than retry.
var ErrRemovedTemplateField = errors.New("template uses a removed field")

var removedFields = regexp.MustCompile(`\.Updated\b|\.Changed\.ImageResult\b`)

// Message renders tmpl (Go text/template with sprig's hermetic functions,
// as Flux) over data; an empty tmpl gives DefaultMessage. Errors are the
// template's parse or execution errors, or ErrRemovedTemplateField.
func Message(tmpl string, data TemplateData) (string, error) {
	if strings.TrimSpace(tmpl) == "" {
		return DefaultMessage, nil
	}
	if m := removedFields.FindString(tmpl); m != "" {
		return "", errors.Join(ErrRemovedTemplateField, errors.New("the field "+m+" no longer exists"))
	}
	return Render("commit message", tmpl, data)
}

// Render renders tmpl (Go text/template with sprig's hermetic functions)
// over data; errors are the template's parse or execution errors, named
// by name.
func Render(name, tmpl string, data TemplateData) (string, error) {
	t, err := template.New(name).Funcs(sprig.HermeticTxtFuncMap()).Parse(tmpl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}
