package exec

import (
	"context"
	"github.com/flowrun/flow/steps/delegate"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
)

// TestDelegationEnvironment: a turn that may delegate hands its program
// the socket and token `flow delegate` uses; a turn that may not drops
// the ones it inherited, so a flow run inside an agent does not reach
// the outer run's socket.
func TestDelegationEnvironment(t *testing.T) { // not parallel: it sets the environment
	t.Setenv(delegate.EnvSocket, "/outer.sock")
	t.Setenv(delegate.EnvToken, "outer")
	script := `echo "socket=$` + delegate.EnvSocket + ` token=$` + delegate.EnvToken + `"`
	tr := turn(t, script)
	res, err := (&Driver{}).Turn(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Output); got != "socket= token=" {
		t.Errorf("a turn that may not delegate sees %q", got)
	}
	tr = turn(t, script)
	tr.Delegate = &engine.Delegation{Agents: []string{"scout"}, Socket: "/run/delegate.sock", Token: "t1"}
	res, err = (&Driver{}).Turn(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Output); got != "socket=/run/delegate.sock token=t1" {
		t.Errorf("a turn that may delegate sees %q", got)
	}
}
