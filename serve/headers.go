package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
)

// Security headers (docs/serve.md, "Safety"). No page of the server may be
// framed by another: the index's answer buttons are one click each, and a
// page that framed them could make that click for the reader.
const (
	// framePolicy goes with every answer.
	framePolicy = "frame-ancestors 'none'"
	// runFilePolicy goes with every file served from a run directory
	// (report.html): such a file is written by the run, whose processes
	// may outlive it, so it is served as an opaque, script-less document:
	// no script runs, no form posts, nothing is fetched from anywhere (its
	// styles are inline, its images data: URLs).
	runFilePolicy = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"
)

// secureHeaders sets the headers every answer carries: not to be framed,
// not to be sniffed as another type than it says.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", framePolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// serveRunFile serves the file name of a run directory, sandboxed
// (runFilePolicy). Only a regular file directly in dir is served: a
// symbolic link put there (to a secret of the server's user) is refused,
// and so is anything else that is not a file.
func (s *Server) serveRunFile(w http.ResponseWriter, r *http.Request, dir, name string) {
	w.Header().Set("Content-Security-Policy", runFilePolicy)
	w.Header().Set("Cache-Control", "no-store")
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			http.Error(w, fmt.Sprintf("the run has no %s (yet)", name), http.StatusNotFound)
		case errors.Is(err, syscall.ELOOP):
			s.log.Warn("refused to serve a run file: it is a symbolic link", "file", path)
			http.Error(w, fmt.Sprintf("%s is a symbolic link: flow serve serves only regular files of a run directory", name), http.StatusForbidden)
		default:
			http.Error(w, fmt.Sprintf("reading %s: %v", name, err), http.StatusInternalServerError)
		}
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		s.log.Warn("refused to serve a run file: it is not a regular file", "file", path)
		http.Error(w, fmt.Sprintf("%s is not a regular file: flow serve serves only regular files of a run directory", name), http.StatusForbidden)
		return
	}
	http.ServeContent(w, r, name, st.ModTime(), f)
}
