package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// entry is one flow file of the directory as last loaded: its plan, or
// the faults that keep it from loading.
type entry struct {
	Name   string
	File   string
	Plan   *flows.Plan        // nil: broken
	Diags  schema.Diagnostics // errors (broken) or warnings
	Loaded time.Time
}

// Broken reports whether the file does not load.
func (e *entry) Broken() bool { return e.Plan == nil }

// catalog holds the flows of the directory. A reload replaces entries
// whole; a run holds the plan it started with, which nothing changes.
// Safe for concurrent use.
type catalog struct {
	dir  string
	opts flows.Options

	mu      sync.Mutex
	sources map[string][]byte // the files as last read, by path
	faults  map[string]string // the files that are not read, by path: why
	entries map[string]*entry // by flow name
	version int               // counts the reloads that found the files changed (a removal too)
}

func newCatalog(dir string, opts flows.Options) *catalog {
	return &catalog{dir: dir, opts: opts, entries: map[string]*entry{}}
}

// flowFiles reads the flow files of dir (*.yaml, *.yml; not below), each
// at most limit bytes (limits.file_bytes). What is not a regular file of
// dir (a symbolic link, whatever it points to; a FIFO, a device) and a
// file past the limit is not read: faults says why, by path.
func flowFiles(dir string, limit int) (files map[string][]byte, faults map[string]string, err error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading flow directory: %w", err)
	}
	files, faults = map[string][]byte{}, map[string]string{}
	for _, de := range des {
		ext := filepath.Ext(de.Name())
		if de.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		b, fault, err := readFlowFile(path, limit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // removed meanwhile: gone
		case err != nil:
			faults[path] = err.Error()
		case fault != "":
			faults[path] = fault
		default:
			files[path] = b
		}
	}
	return files, faults, nil
}

// readFlowFile reads the flow file at path without ever blocking: only a
// regular file of at most limit bytes is read, opened with O_NONBLOCK and
// checked again once open, so a FIFO put there meanwhile is not waited
// on. A symbolic link is never followed, whatever it points to: a link
// named like a flow file (to /etc/shadow, a .env) would otherwise have
// its first line shown as a parse error. fault says why a file is not
// read.
func readFlowFile(path string, limit int) (src []byte, fault string, err error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, "", err
	}
	if fault := notAFlowFile(st, limit); fault != "" {
		return nil, fault, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) { // made a link meanwhile
		return nil, linkFault, nil
	}
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, "", err
	}
	if fault := notAFlowFile(st, limit); fault != "" {
		return nil, fault, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, "", err
	}
	if len(b) > limit {
		return nil, fmt.Sprintf("the file is larger than limits.file_bytes (%d bytes)", limit), nil
	}
	return b, "", nil
}

// linkFault is why a symbolic link is not read; it names nothing of the
// link's target.
const linkFault = "refused: a symbolic link: flow serve reads only regular files inside its directory, never what a link points to"

func notAFlowFile(st fs.FileInfo, limit int) string {
	if st.Mode()&fs.ModeSymlink != 0 {
		return linkFault
	}
	if !st.Mode().IsRegular() {
		return fmt.Sprintf("not a regular file (%s): a flow file is read only if it is one", fileType(st.Mode()))
	}
	if st.Size() > int64(limit) {
		return fmt.Sprintf("the file is larger than limits.file_bytes (%d bytes; it has %d)", limit, st.Size())
	}
	return ""
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// reload reads the directory and, if any file changed, appeared or went,
// loads every file again (a file may call another). It returns the
// entries whose load changed and the broken ones among them.
func (c *catalog) reload() (changed []*entry, err error) {
	files, faults, err := flowFiles(c.dir, c.opts.Limits.WithDefaults().FileBytes)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	same := maps.EqualFunc(files, c.sources, bytes.Equal) && maps.Equal(faults, c.faults)
	c.mu.Unlock()
	if same {
		return nil, nil
	}
	opts := c.opts
	opts.Sources = maps.Clone(files)
	for path := range faults {
		opts.Sources[path] = nil // a flow calling one is not left waiting on it
	}
	next := map[string]*entry{}
	now := time.Now()
	for _, path := range slices.Sorted(maps.Keys(files)) {
		name := schema.Stem(path)
		if prev, dup := next[name]; dup {
			next[name+filepath.Ext(path)] = &entry{Name: name, File: path, Loaded: now, Diags: schema.Diagnostics{{
				Pos: schema.Pos{File: path}, Code: schema.CodeName, Summary: fmt.Sprintf("flow %q is also %s", name, filepath.Base(prev.File)),
				Detail: "keep one file per flow name"}}}
			continue
		}
		plan, diags := flows.Load(path, opts)
		next[name] = &entry{Name: name, File: path, Plan: plan, Diags: diags, Loaded: now}
	}
	for _, path := range slices.Sorted(maps.Keys(faults)) {
		name := schema.Stem(path)
		if _, dup := next[name]; dup {
			name += filepath.Ext(path)
		}
		next[name] = &entry{Name: name, File: path, Loaded: now, Diags: schema.Diagnostics{{
			Pos: schema.Pos{File: path}, Code: schema.CodeRead, Summary: faults[path], Detail: "flow serve reads regular files inside its directory of at most limits.file_bytes"}}}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range next {
		old := c.entries[name]
		if old == nil || old.File != e.File || !bytes.Equal(files[e.File], c.sources[old.File]) || old.Broken() != e.Broken() || old.Diags.Error() != e.Diags.Error() {
			changed = append(changed, e)
		}
	}
	c.sources, c.faults, c.entries = files, faults, next
	c.version++
	slices.SortFunc(changed, func(a, b *entry) int { return strings.Compare(a.Name, b.Name) })
	return changed, nil
}

// changes counts the reloads that found the files changed.
func (c *catalog) changes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// get returns the entry of a flow by name, or nil.
func (c *catalog) get(name string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[name]
}

// all returns every entry, by name.
func (c *catalog) all() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Collect(maps.Values(c.entries))
	slices.SortFunc(out, func(a, b *entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}
