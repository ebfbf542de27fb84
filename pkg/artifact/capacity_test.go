package artifact

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write that would bring the storage above MaxBytes fails with
// ErrStorageFull and leaves neither the artifact nor its temporary file;
// the work directory does not count; without MaxBytes nothing is refused.
func TestStorageMaxBytes(t *testing.T) {
	tests := []struct {
		name    string
		max     int64
		size    int
		refused bool
	}{
		{"no bound", 0, 5000, false},
		{"within the bound", 3000, 1000, false},
		{"above the bound", 3000, 2500, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewStorage(t.TempDir(), "127.0.0.1:1", 0, 2)
			if err != nil {
				t.Fatal(err)
			}
			s.MaxBytes = tt.max
			if _, err := s.Copy("gitrepository/ns/a", "old.tar.gz", "r1", strings.NewReader(strings.Repeat("x", 1000))); err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(s.BasePath, ".work")
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, "clone"), make([]byte, 10000), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = s.Copy("gitrepository/ns/b", "new.tar.gz", "r2", strings.NewReader(strings.Repeat("y", tt.size)))
			if got := errors.Is(err, ErrStorageFull); got != tt.refused {
				t.Fatalf("refused %t (%v), want %t", got, err, tt.refused)
			}
			entries, _ := os.ReadDir(filepath.Join(s.BasePath, "gitrepository", "ns", "b"))
			if kept := len(entries) > 0; kept == tt.refused {
				t.Errorf("files of the new artifact %v, refused %t", entries, tt.refused)
			}
		})
	}
}
