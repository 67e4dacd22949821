package delegate

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/delegatetest"
)

func TestServe(t *testing.T) {
	t.Parallel()
	fake := delegatetest.Start(t, func(r engine.DelegateRequest) engine.DelegateReply {
		if r.Agent == "tester" {
			return engine.DelegateReply{Error: "delegate: max_depth 1 reached"}
		}
		return engine.DelegateReply{Answer: "found it"}
	})
	ctx := context.Background()
	for _, tc := range []struct {
		args, want string
		isErr      bool
	}{
		{`{"agent":"scout","task":"look"}`, "found it", false},
		{`{"agent":"tester","task":"run"}`, "delegate: max_depth 1 reached", true},
		{`{"agent":"scout"}`, "both agent and task", true},
		{`["scout"]`, "not a JSON object", true},
	} {
		text, isErr := Serve(ctx, fake.Socket(), "tok", []byte(tc.args))
		if isErr != tc.isErr || !strings.Contains(text, tc.want) {
			t.Errorf("Serve(%s) = %q, %v; want %q, %v", tc.args, text, isErr, tc.want, tc.isErr)
		}
	}
	if n := len(fake.Calls()); n != 2 {
		t.Errorf("%d calls reached the socket, want the 2 with readable arguments", n)
	}
	if text, isErr := Serve(ctx, t.TempDir()+"/none.sock", "tok", []byte(`{"agent":"scout","task":"x"}`)); !isErr || !strings.HasPrefix(text, "delegate: ") {
		t.Errorf("Serve without a socket = %q, %v", text, isErr)
	}
}

func TestMCPLaunch(t *testing.T) {
	t.Parallel()
	l, err := MCPLaunch(&engine.Delegation{Agents: []string{"scout", "tester"}, Socket: "/run/d.sock", Token: "tok",
		Server: []string{"/bin/flow", "mcp-delegate"}})
	if err != nil || l.Command != "/bin/flow" || !slices.Equal(l.Args, []string{"mcp-delegate", "--agent", "scout", "--agent", "tester"}) ||
		l.Env[EnvSocket] != "/run/d.sock" || l.Env[EnvToken] != "tok" {
		t.Errorf("MCPLaunch = %+v, %v", l, err)
	}
	if _, err := MCPLaunch(&engine.Delegation{Agents: []string{"scout"}}); err == nil || !strings.Contains(err.Error(), "Delegation.Server") {
		t.Errorf("MCPLaunch without a server = %v", err)
	}
}
