package delegate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Description is what every driver tells the model the tool does.
const Description = "Hand a task to another agent and wait for its answer. " +
	"The agent works on its own, in a fresh conversation: give it everything it needs in the task. " +
	"The result is the agent's answer, or an error that says why there is none."

// Schema is the tool's parameters as a JSON Schema object, the same on
// every driver: agent is one of agents, task is free text.
func Schema(agents []string) map[string]any {
	agent := map[string]any{"type": "string", "description": "who does the task"}
	if len(agents) > 0 {
		agent["enum"] = append([]string(nil), agents...)
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"agent": agent,
			"task":  map[string]any{"type": "string", "description": "the task, complete in itself"},
		},
		"required":             []string{"agent", "task"},
		"additionalProperties": false,
	}
}

// Args are a call's arguments.
type Args struct {
	Agent string `json:"agent"`
	Task  string `json:"task"`
}

// ParseArgs reads a call's arguments, a JSON object, with an error the
// model can read when they are not what Schema says.
func ParseArgs(raw []byte) (Args, error) {
	var a Args
	if err := json.Unmarshal(raw, &a); err != nil {
		return Args{}, fmt.Errorf("the arguments are not a JSON object with string fields agent and task: %v", err)
	}
	if strings.TrimSpace(a.Agent) == "" || strings.TrimSpace(a.Task) == "" {
		return Args{}, fmt.Errorf("both agent and task must be given")
	}
	return a, nil
}

// Serve carries one call with the raw arguments to the socket and returns
// the tool's result: the child's answer, or text saying why there is none
// with isError set. The host decides everything (which agents, limits), so
// Serve checks only that the arguments are readable.
func Serve(ctx context.Context, socket, token string, raw []byte) (text string, isError bool) {
	a, err := ParseArgs(raw)
	if err != nil {
		return "delegate: " + err.Error(), true
	}
	reply, err := Call(ctx, socket, token, a.Agent, a.Task)
	switch {
	case err != nil:
		return err.Error(), true
	case reply.Error != "":
		return reply.Error, true
	}
	return reply.Answer, false
}
