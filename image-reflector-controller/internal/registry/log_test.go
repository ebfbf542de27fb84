package registry

import (
	"encoding/json"
	"io"
	"log"
)

func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
