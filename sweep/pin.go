package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/flowrun/flow/flows"
)

// Pin writes the assignment the sweep's report chooses into the flow
// file's `models:`, as one line, leaving every other line of the file as
// it was; the file is loaded again before it is written, and not written
// if it would not load. It returns the choice and the line written.
func (s *Sweep) Pin(opts flows.Options) (*Choice, string, error) {
	f := s.Snapshot()
	rep := Build(f)
	choice := rep.Pin
	if choice == nil {
		return nil, "", errors.New("no cell of the sweep has ended: there is nothing to choose from")
	}
	for _, row := range rep.Assignments {
		if row.Assignment == choice.Assignment && row.Successes == 0 {
			// A choice among failures is no choice: the file keeps its models.
			return choice, "", fmt.Errorf("no run of the sweep succeeded (%s: 0 of %d): there is nothing worth pinning; look at why the runs failed (flow sweep show)", row.Assignment, row.N)
		}
	}
	var a Assignment
	for _, x := range f.Assignments {
		if x.Label == choice.Assignment {
			a = x
		}
	}
	if a.Model == "" && len(a.Agents) == 0 {
		return choice, "", errors.New("the sweep varies no model: there is nothing to pin")
	}
	src, err := os.ReadFile(f.FlowFile)
	if err != nil {
		return choice, "", fmt.Errorf("reading the flow to pin: %w", err)
	}
	plan, diags := flows.LoadSource(f.FlowFile, src, opts)
	if diags.HasErrors() {
		return choice, "", fmt.Errorf("%s does not load as it is now; fix it first:\n%s", f.FlowFile, diags.Error())
	}
	models := maps.Clone(plan.Root.Models)
	if models == nil {
		models = map[string]string{}
	}
	if a.Model != "" {
		for name := range plan.Agents {
			models[name] = a.Model
		}
	}
	maps.Copy(models, a.Agents)
	out, line, err := PinModels(src, models)
	if err != nil {
		return choice, "", fmt.Errorf("pinning %s: %w", f.FlowFile, err)
	}
	if _, diags := flows.LoadSource(f.FlowFile, out, opts); diags.HasErrors() {
		return choice, "", fmt.Errorf("pinning %s would break it, so it was left alone:\n%s", f.FlowFile, diags.Error())
	}
	st, err := os.Stat(f.FlowFile)
	if err != nil {
		return choice, "", fmt.Errorf("pinning: %w", err)
	}
	if err := os.WriteFile(f.FlowFile, out, st.Mode().Perm()); err != nil {
		return choice, "", fmt.Errorf("pinning: %w", err)
	}
	return choice, line, nil
}

// PinModels returns src with its top-level `models:` replaced by one line
// holding models (agents in name order), or with that line added after
// `model:` (else before `nodes:`) — a one-line change to review. Every
// other line is kept byte for byte.
func PinModels(src []byte, models map[string]string) ([]byte, string, error) {
	file, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, "", fmt.Errorf("reading the flow: %w", err)
	}
	if len(file.Docs) == 0 || file.Docs[0] == nil {
		return nil, "", errors.New("the flow file is empty")
	}
	m, ok := file.Docs[0].Body.(*ast.MappingNode)
	if !ok || m.IsFlowStyle {
		return nil, "", fmt.Errorf("the flow is not a block mapping; add this line yourself: %s", modelsLine(models))
	}
	type key struct {
		name string
		line int
	}
	var keys []key
	for _, mv := range m.Values {
		if tk := mv.Key.GetToken(); tk != nil && tk.Position != nil {
			keys = append(keys, key{tk.Value, tk.Position.Line})
		}
	}
	slices.SortFunc(keys, func(a, b key) int { return a.line - b.line })
	nl := "\n"
	if bytes.Contains(src, []byte("\r\n")) {
		nl = "\r\n"
	}
	lines := strings.SplitAfter(string(src), "\n")
	// end returns the last line (1-based) of the entry at keys[i]: up to the
	// next key, without trailing blank lines and comments at the margin.
	end := func(i int) int {
		last := len(lines)
		if i+1 < len(keys) {
			last = keys[i+1].line - 1
		}
		for last > keys[i].line {
			text := strings.TrimRight(lines[last-1], "\r\n")
			if strings.TrimSpace(text) != "" && (text[0] == ' ' || text[0] == '\t') {
				break
			}
			last--
		}
		return last
	}
	at := func(name string) int { return slices.IndexFunc(keys, func(k key) bool { return k.name == name }) }
	line := modelsLine(models)
	var from, to int // replace lines from..to (1-based, inclusive); to = from-1 inserts
	switch i := at("models"); {
	case i >= 0:
		from, to = keys[i].line, end(i)
	case at("model") >= 0:
		from = end(at("model")) + 1
		to = from - 1
	case at("nodes") >= 0:
		from = keys[at("nodes")].line
		for from > 1 && strings.HasPrefix(strings.TrimSpace(lines[from-2]), "#") {
			from-- // keep the comment above nodes: with it
		}
		to = from - 1
	default:
		return nil, "", errors.New("the flow has no nodes: key")
	}
	if from > len(lines) && len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
		lines[len(lines)-1] += nl
	}
	out := slices.Concat(lines[:from-1], []string{line + nl}, lines[min(to, len(lines)):])
	return []byte(strings.Join(out, "")), line, nil
}

// modelsLine is `models: {agent: model, …}` in agent order.
func modelsLine(models map[string]string) string {
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(models)) {
		parts = append(parts, a+": "+yamlScalar(models[a]))
	}
	return "models: {" + strings.Join(parts, ", ") + "}"
}

var plainModel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./@+-]*$`) })

// yamlScalar writes a model name plain when YAML reads it back as the same
// string, else double-quoted (a JSON string is a YAML one).
func yamlScalar(s string) string {
	if plainModel().MatchString(s) {
		switch strings.ToLower(s) {
		case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		default:
			if _, err := strconv.ParseFloat(s, 64); err != nil {
				return s
			}
		}
	}
	b, _ := json.Marshal(s)
	return string(b)
}
