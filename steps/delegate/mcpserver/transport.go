package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one inbound message (a line of newline-delimited JSON).
const maxLine = 16 << 20

// lineTransport is the server's stdio transport: newline-delimited JSON-RPC
// as the SDK's, with two differences the MCP specification asks for. A
// line that is not a JSON-RPC message is answered with a JSON-RPC error
// (-32700 for text that is not JSON, -32600 for JSON that is not a
// message) and the server reads on, where the SDK's transport ends the
// session. A request the client cancelled (notifications/cancelled) gets
// no response: the handler's answer, or the SDK's cancellation error, is
// dropped.
type lineTransport struct {
	r io.Reader
	w io.Writer
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{w: t.w, cancelled: map[string]bool{}, lines: make(chan line), closed: make(chan struct{})}
	go c.scan(t.r) // ends at the end of the input; Close stops waiting for it
	return c, nil
}

func stdio() mcp.Transport { return &lineTransport{r: os.Stdin, w: os.Stdout} }

type line struct {
	b   []byte
	err error
}

type lineConn struct {
	wmu sync.Mutex
	w   io.Writer

	mu        sync.Mutex
	cancelled map[string]bool // the requests the client cancelled, by id

	lines     chan line
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *lineConn) scan(r io.Reader) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), maxLine)
	for s.Scan() {
		b := append([]byte(nil), s.Bytes()...)
		select {
		case c.lines <- line{b: b}:
		case <-c.closed:
			return
		}
	}
	err := s.Err()
	if err == nil {
		err = io.EOF
	}
	select {
	case c.lines <- line{err: err}:
	case <-c.closed:
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l line
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
		}
		if len(bytes.TrimSpace(l.b)) == 0 {
			continue
		}
		if !json.Valid(l.b) {
			c.reject(jsonrpc.CodeParseError, "parse error: the line is not JSON")
			continue
		}
		msg, err := jsonrpc.DecodeMessage(l.b)
		if err != nil {
			c.reject(jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
					c.mu.Lock()
					c.cancelled[idKey(id)] = true
					c.mu.Unlock()
				}
			}
		}
		return msg, nil
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && r.ID.IsValid() {
		c.mu.Lock()
		gone := c.cancelled[idKey(r.ID)]
		delete(c.cancelled, idKey(r.ID))
		c.mu.Unlock()
		if gone {
			return nil // the client cancelled it: no response (MCP, cancellation)
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.write(append(b, '\n'))
}

// reject answers a line that is not a message with a JSON-RPC error of id
// null: its id could not be read.
func (c *lineConn) reject(code int, message string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
	_ = c.write(append(b, '\n'))
}

func (c *lineConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(b)
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }
