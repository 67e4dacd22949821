package sweep

import (
	"strings"
	"testing"
)

func TestPinModelsChangesOneLine(t *testing.T) {
	models := map[string]string{"reviewer": "beta", "coder": "anthropic/claude-sonnet-4-5"}
	line := "models: {coder: anthropic/claude-sonnet-4-5, reviewer: beta}"
	tests := []struct {
		name, src, want string
	}{
		{
			name: "a flow-style models: is replaced",
			src:  "name: f\nmodels: {coder: old}   # pinned\nnodes:\n  - {id: a, run: [x]}\n",
			want: "name: f\n" + line + "\nnodes:\n  - {id: a, run: [x]}\n",
		},
		{
			name: "a block-style models: is replaced whole, the comment after it kept",
			src:  "name: f\nmodels:\n  coder: old\n  reviewer: older\n\n# the nodes\nnodes:\n  - {id: a, run: [x]}\n",
			want: "name: f\n" + line + "\n\n# the nodes\nnodes:\n  - {id: a, run: [x]}\n",
		},
		{
			name: "added after model:",
			src:  "name: f\nmodel: m\ntimeout: 1m\nnodes: [{id: a, run: [x]}]\n",
			want: "name: f\nmodel: m\n" + line + "\ntimeout: 1m\nnodes: [{id: a, run: [x]}]\n",
		},
		{
			name: "added above nodes: and its comment",
			src:  "name: f\ndescription: d\n# what runs\nnodes:\n  - {id: a, run: [x]}",
			want: "name: f\ndescription: d\n" + line + "\n# what runs\nnodes:\n  - {id: a, run: [x]}",
		},
		{
			name: "line endings kept",
			src:  "name: f\r\nmodel: m\r\nnodes: [{id: a, run: [x]}]\r\n",
			want: "name: f\r\nmodel: m\r\n" + line + "\r\nnodes: [{id: a, run: [x]}]\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotLine, err := PinModels([]byte(tt.src), models)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			if gotLine != line {
				t.Errorf("line %q", gotLine)
			}
		})
	}
	if _, _, err := PinModels([]byte("{name: f, nodes: []}"), models); err == nil || !strings.Contains(err.Error(), line) {
		t.Errorf("a flow-style file: %v", err)
	}
}

func TestYAMLScalar(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-4o": "gpt-4o", "anthropic/claude-sonnet-4-5": "anthropic/claude-sonnet-4-5",
		"1.5": `"1.5"`, "yes": `"yes"`, "a: b": `"a: b"`, "x,y": `"x,y"`, "-m": `"-m"`,
	} {
		if got := yamlScalar(in); got != want {
			t.Errorf("yamlScalar(%q) = %s, want %s", in, got, want)
		}
	}
}
