package trace

import (
	"encoding/json"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/flowrun/flow/rundir"
)

// other is the conventions' value for what they have no name for.
const other = "_OTHER"

// provider is what an agent's spans say of who answered it: its driver
// and the model it names.
type provider struct {
	driver, model string
}

// providers reads the run's agents from its snapshot: each one's driver
// and model, by name.
func providers(dir string) map[string]provider {
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil {
		return nil
	}
	out := make(map[string]provider, len(snap.Agents))
	for name, raw := range snap.Agents {
		var a struct {
			Driver string `json:"driver"`
			Model  string `json:"model"`
		}
		if json.Unmarshal(raw, &a) == nil {
			out[name] = provider{a.Driver, a.Model}
		}
	}
	return out
}

// piProviders are pi's names of the providers the conventions name
// otherwise. "flow" is the provider flow writes for a server of its own
// (docs/drivers.md), an OpenAI-compatible one.
var piProviders = map[string]string{
	"flow":                   semconv.GenAIProviderNameOpenAI.Value.AsString(),
	"google":                 semconv.GenAIProviderNameGCPGemini.Value.AsString(),
	"google-vertex":          semconv.GenAIProviderNameGCPVertexAI.Value.AsString(),
	"amazon-bedrock":         semconv.GenAIProviderNameAWSBedrock.Value.AsString(),
	"mistral":                semconv.GenAIProviderNameMistralAI.Value.AsString(),
	"xai":                    semconv.GenAIProviderNameXAI.Value.AsString(),
	"azure-openai-responses": semconv.GenAIProviderNameAzureAIOpenAI.Value.AsString(),
}

// name is gen_ai.provider.name of a visit of the agent that asked model:
// the conventions' name of the provider its driver speaks to — Anthropic
// for Claude Code, OpenAI for Codex and the OpenAI-compatible drivers,
// for pi the provider its model names (provider/id) — and for a driver
// that speaks to none (exec), the driver's name.
func (p provider) name(model string) string {
	switch p.driver {
	case "claude":
		return semconv.GenAIProviderNameAnthropic.Value.AsString()
	case "codex", "openai", "native":
		return semconv.GenAIProviderNameOpenAI.Value.AsString()
	case "pi":
		if model == "" {
			model = p.model
		}
		prefix, _, ok := strings.Cut(model, "/")
		if !ok || prefix == "" {
			return "pi"
		}
		if n, ok := piProviders[prefix]; ok {
			return n
		}
		return prefix
	case "":
		return other // the snapshot does not say
	}
	return p.driver
}
