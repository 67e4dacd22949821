// Package delegate carries an agent's delegate calls to the run's
// delegation socket (docs/delegation.md). Drivers, the MCP server a CLI
// starts and the `flow delegate` command all call Call; the host serves.
package delegate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/flowrun/flow/engine"
)

// maxReply bounds a reply line: an answer is already bounded by the host,
// this only keeps a broken server from filling memory.
const maxReply = 16 << 20

// Call sends one delegate call to the socket and waits for its reply.
// It returns an error only when the call could not be carried (no socket,
// a broken line); a refused call or a failed child is a reply with Error.
// ctx's end closes the connection, which the server reads as the call
// withdrawn.
func Call(ctx context.Context, socket, token, agent, task string) (engine.DelegateReply, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return engine.DelegateReply{}, fmt.Errorf("delegate: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	req, err := json.Marshal(engine.DelegateRequest{Token: token, Agent: agent, Task: task})
	if err != nil {
		return engine.DelegateReply{}, fmt.Errorf("delegate: %w", err)
	}
	// The token goes first, on a line of its own: the server checks it,
	// and who is calling, before it reads the request.
	if _, err := conn.Write(append([]byte(token+"\n"), append(req, '\n')...)); err != nil {
		return engine.DelegateReply{}, fmt.Errorf("delegate: %w", err)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), maxReply)
	if !sc.Scan() {
		if ctx.Err() != nil {
			return engine.DelegateReply{}, ctx.Err()
		}
		if err := sc.Err(); err != nil {
			return engine.DelegateReply{}, fmt.Errorf("delegate: %w", err)
		}
		return engine.DelegateReply{}, fmt.Errorf("delegate: the server closed the call without a reply")
	}
	var reply engine.DelegateReply
	if err := json.Unmarshal(sc.Bytes(), &reply); err != nil {
		return engine.DelegateReply{}, fmt.Errorf("delegate: a reply that is not JSON: %w", err)
	}
	return reply, nil
}
