package artifact

import (
	"bytes"
	"io"
	"os"
)

// body holds one download while its digest is checked: in memory up to
// memoryMax, else in a temporary file that never exceeds the download's
// cap (the cut happens while writing) and is removed by close.
type body struct {
	mem  *bytes.Buffer
	file *os.File
}

func newBody(limit int64) (*body, error) {
	if limit <= memoryMax {
		return &body{mem: bytes.NewBuffer(make([]byte, 0, limit))}, nil
	}
	f, err := os.CreateTemp("", "artifact-*.tar.gz")
	if err != nil {
		return nil, err
	}
	return &body{file: f}, nil
}

func (b *body) Write(p []byte) (int, error) {
	if b.mem != nil {
		return b.mem.Write(p)
	}
	return b.file.Write(p)
}

// reset empties b before another attempt.
func (b *body) reset() error {
	if b.mem != nil {
		b.mem.Reset()
		return nil
	}
	if err := b.file.Truncate(0); err != nil {
		return err
	}
	_, err := b.file.Seek(0, io.SeekStart)
	return err
}

// reader returns the bytes written, from the start.
func (b *body) reader() (io.Reader, error) {
	if b.mem != nil {
		return bytes.NewReader(b.mem.Bytes()), nil
	}
	if _, err := b.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return b.file, nil
}

func (b *body) close() {
	if b.file != nil {
		b.file.Close()
		os.Remove(b.file.Name())
	}
}
