package serve

import (
	"bufio"
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
)

// Token is one named bearer token: Name is who answered an approval.
type Token struct {
	Name   string
	Secret string
}

// ReadTokens reads a token file: one `name token` per line; blank lines
// and lines starting with # are skipped. A token shorter than 16
// characters, a line without both fields and a name given twice are
// errors naming the line. A file other users may read or write is refused:
// its tokens are no secret (chmod 600 it).
func ReadTokens(path string) ([]Token, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o006 != 0 {
		return nil, fmt.Errorf("%s can be read or written by every user (mode %04o): its tokens are no secret; chmod 600 %s", path, perm, path)
	}
	var out []Token
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		switch {
		case len(fields) != 2:
			return nil, fmt.Errorf("%s:%d: write `name token`, two fields", path, line)
		case len(fields[1]) < 16:
			return nil, fmt.Errorf("%s:%d: the token of %s is shorter than 16 characters; use a long random one (openssl rand -hex 24)", path, line, fields[0])
		case seen[fields[0]]:
			return nil, fmt.Errorf("%s:%d: %s has a token already", path, line, fields[0])
		}
		seen[fields[0]] = true
		out = append(out, Token{Name: fields[0], Secret: fields[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading token file: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no tokens", path)
	}
	return out, nil
}

// tokenCookie carries the token of a browser that logged in on /login.
const tokenCookie = "flow_token"

// anonymous is who answers when the server takes no tokens (loopback).
const anonymous = "local"

// whoKey keys the name of the request's token in its context.
type whoKey struct{}

// who returns the name of the token the request carried.
func who(r *http.Request) string {
	if name, ok := r.Context().Value(whoKey{}).(string); ok {
		return name
	}
	return anonymous
}

// match returns the name of the token secret is, comparing with every
// token in constant time.
func (s *Server) match(secret string) (string, bool) {
	name, found := "", 0
	for _, t := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(secret), []byte(t.Secret)) == 1 {
			name, found = t.Name, 1
		}
	}
	return name, found == 1
}

// authenticate lets a request through if the server takes no tokens, or
// if it carries one: `Authorization: Bearer <token>`, or the cookie
// /login sets. Without one, the API and /metrics answer 401 and the pages
// send the browser to /login.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A wait's webhook carries its own token in its path (hookEvent).
		if len(s.cfg.Tokens) == 0 || r.URL.Path == "/login" || r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/hooks/") {
			next.ServeHTTP(w, r)
			return
		}
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			if c, err := r.Cookie(tokenCookie); err == nil {
				secret = c.Value
			}
		}
		name, ok := s.match(strings.TrimSpace(secret))
		if !ok {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/metrics" && r.URL.Path != "/events" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="flow"`)
			fail(w, http.StatusUnauthorized, "Authorization", "give a token: Authorization: Bearer <token> (a token of --token-file)")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, name)))
	})
}

// login takes a token from a form and keeps it in an HttpOnly,
// SameSite=Strict cookie, so the page works in a browser.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		s.render(w, "login", map[string]any{"Title": "Log in"})
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("token"))
	if _, ok := s.match(secret); !ok || len(s.cfg.Tokens) == 0 {
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, "login", map[string]any{"Title": "Log in", "Error": "That is not a token of this server."})
		return
	}
	secure := r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: secret, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
