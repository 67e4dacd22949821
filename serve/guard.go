package serve

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// What bounds a connection (docs/serve.md, "Limits"): a client has
// ReadHeaderTimeout to send its request's headers and ReadTimeout to send
// the whole request; an idle keep-alive connection is closed after
// IdleTimeout. An event stream clears its deadlines once it starts: it
// stays open for as long as the client listens.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	IdleTimeout       = 60 * time.Second
)

// Defaults of the connection caps.
const (
	// DefaultMaxConnsPerClient caps the connections one client address
	// holds open at once: a browser needs a few (six at most per host,
	// one of them an event stream per tab).
	DefaultMaxConnsPerClient = 64
	// DefaultMaxQueued caps the runs waiting for a slot.
	DefaultMaxQueued = 100
)

// allowHost lets a request through only when its Host names this server:
// a loopback name (localhost, an address of 127.0.0.0/8, ::1), the host
// the server listens on when that is an address, any address when it
// listens on all of them, or a name of Config.Hosts. A page on another
// name that resolves to this server (DNS rebinding) passes a same-origin
// check, since to the browser it is its own origin; its Host gives it
// away, and it gets 421 Misdirected Request.
func (s *Server) allowHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			s.log.Warn("request refused: its Host names another server (add it with --host if it is this one)", "host", r.Host, "path", r.URL.Path, "client", r.RemoteAddr)
			fail(w, http.StatusMisdirectedRequest, "Host", "%q is not a name of this server: flow serve answers to loopback names and to the names given with --host", r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" { // HTTP/1.0 without Host: no browser sends that
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" {
		return true
	}
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	// An address names no one else: DNS rebinding needs a name.
	listen, _, _ := net.SplitHostPort(s.Addr())
	lip := net.ParseIP(listen)
	return lip != nil && (lip.IsUnspecified() || lip.Equal(ip))
}

// capListener closes a connection at once when its client holds perClient
// open already, or when the server holds total: idle clients cannot take
// every file descriptor, so the API, the page and the folder poll keep
// working.
type capListener struct {
	net.Listener
	perClient, total int

	mu    sync.Mutex
	open  map[string]int
	count int
}

func newCapListener(ln net.Listener, perClient, total int) *capListener {
	return &capListener{Listener: ln, perClient: perClient, total: total, open: map[string]int{}}
}

// Accept returns the next connection within the caps.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientOf(c.RemoteAddr())
		l.mu.Lock()
		ok := l.open[client] < l.perClient && l.count < l.total
		if ok {
			l.open[client]++
			l.count++
		}
		l.mu.Unlock()
		if !ok {
			_ = c.Close()
			continue
		}
		return &cappedConn{Conn: c, l: l, client: client}, nil
	}
}

func clientOf(a net.Addr) string {
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}

type cappedConn struct {
	net.Conn
	l      *capListener
	client string
	once   sync.Once
}

func (c *cappedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.client]--; c.l.open[c.client] <= 0 {
			delete(c.l.open, c.client)
		}
		c.l.count--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// maxConns is the cap on all connections: half the descriptors the
// process may open (the rest are for runs, files and the poll), within
// [16, 4096].
func maxConns() int {
	var lim syscall.Rlimit
	n := 1024
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur > 0 && lim.Cur < 1<<20 {
		n = int(lim.Cur)
	}
	return min(max(n/2, 16), 4096)
}

// streaming lifts the request deadlines of an event stream: it is read
// once and then written for as long as the client listens.
func streaming(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}
