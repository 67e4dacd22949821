package schema

// The keys each document type accepts. The decoder rejects any other key
// (with a "did you mean"), and a test holds flow.schema.json to the same sets.
var (
	flowKeys = []string{"name", "description", "input", "model", "models", "timeout", "budget", "concurrency",
		"agents", "project_agents", "schedule", "sweep", "nodes"}
	nodeKindKeys = []string{"agent", "run", "choice", "parallel", "map", "loop", "flow", "ask", "wait"}
	nodeKeys     = append(append([]string{"id"}, nodeKindKeys...),
		"prompt", "reads", "output", "memory", "retry", "timeout", "on_fail", "budget", "env",
		"fail_fast", "max", "concurrency", "do", "input", "options", "default", "show",
		"isolation", "land", "repo", "reuse", "delegate", "sandbox")
	loopKeys     = []string{"until", "max"}
	waitKeys     = []string{"for", "until", "event", "timeout", "default"}
	budgetKeys   = []string{"tokens", "cost"}
	scheduleKeys = []string{"cron", "tz", "input", "overlap", "catchup"}
	sweepKeys    = []string{"models", "assign", "inputs", "params", "repeat", "score", "baseline"}
	agentKeys    = []string{"name", "description", "driver", "model", "thinking", "tools", "command",
		"base_url", "api_key_env", "max_steps", "sandbox", "instructions", "delegate"}
	delegateKeys = []string{"agents", "max_depth", "max_children", "concurrency", "budget"}
)

// Keys returns, for each document type, the keys its decoder accepts.
func Keys() map[string][]string {
	return map[string][]string{
		"flow":     flowKeys,
		"node":     nodeKeys,
		"loop":     loopKeys,
		"wait":     waitKeys,
		"budget":   budgetKeys,
		"schedule": scheduleKeys,
		"sweep":    sweepKeys,
		"agent":    agentKeys,
		"delegate": delegateKeys,
	}
}
