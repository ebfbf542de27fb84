package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

var names atomic.Int64

// uniqueName is prefix with a number unique in the test binary.
func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, names.Add(1)) }

// table is the API server's table of a resource, as kubectl prints it:
// the headers of the columns of priority 0 (upper case), their cells per
// row, and the headers of every column (-o wide).
type table struct {
	columns, wide []string
	rows          [][]string
}

// serverTable GETs path as a meta.k8s.io/v1 Table, as kubectl get does.
func serverTable(t *testing.T, path string) table {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, env.Config.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var tb metav1.Table
	if err := json.Unmarshal(b, &tb); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as Table: %d %v: %s", path, resp.StatusCode, err, b)
	}
	var out table
	var shown []int
	for i, c := range tb.ColumnDefinitions {
		h := strings.ToUpper(c.Name)
		out.wide = append(out.wide, h)
		if c.Priority == 0 {
			out.columns = append(out.columns, h)
			shown = append(shown, i)
		}
	}
	for _, r := range tb.Rows {
		var cells []string
		for _, i := range shown {
			cells = append(cells, fmt.Sprint(r.Cells[i]))
		}
		out.rows = append(out.rows, cells)
	}
	return out
}
