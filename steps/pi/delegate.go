package pi

import (
	_ "embed"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/delegate"
)

// extension is the pi extension that registers the delegate tool: a tiny
// client of the run's socket in pi's own Node.js (node:net), speaking the
// wire of steps/delegate.Call: one JSON line out, one back.
//
//go:embed delegate.ts
var extension string

// writeExtension writes the delegate extension for d into dir and returns
// its path. Only the agents and the tool's definition are written; the
// socket and the token reach the extension in pi's environment, so the
// file holds nothing a reader could use.
func writeExtension(d *engine.Delegation, dir string) (string, error) {
	def, err := json.Marshal(map[string]any{
		"name": delegate.Tool, "description": delegate.Description, "parameters": delegate.Schema(d.Agents),
		"socketEnv": delegate.EnvSocket, "tokenEnv": delegate.EnvToken,
	})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "flow-delegate.ts")
	src := strings.Replace(extension, "/*DEFINITION*/ {}", string(def), 1)
	return path, os.WriteFile(path, []byte(src), 0o600)
}
