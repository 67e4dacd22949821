package serve

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	entries map[string]*entry // by flow name
	version int               // counts the reloads that found the files changed (a removal too)
}

func newCatalog(dir string, opts flows.Options) *catalog {
	return &catalog{dir: dir, opts: opts, entries: map[string]*entry{}}
}

// flowFiles reads the flow files of dir (*.yaml, *.yml; not below).
func flowFiles(dir string) (map[string][]byte, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading flow directory: %w", err)
	}
	out := map[string][]byte{}
	for _, de := range des {
		ext := filepath.Ext(de.Name())
		if de.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue // removed meanwhile, or unreadable: gone until it reads
		}
		out[path] = b
	}
	return out, nil
}

// reload reads the directory and, if any file changed, appeared or went,
// loads every file again (a file may call another). It returns the
// entries whose load changed and the broken ones among them.
func (c *catalog) reload() (changed []*entry, err error) {
	files, err := flowFiles(c.dir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	same := maps.EqualFunc(files, c.sources, bytes.Equal)
	c.mu.Unlock()
	if same {
		return nil, nil
	}
	opts := c.opts
	opts.Sources = files
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
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range next {
		old := c.entries[name]
		if old == nil || !bytes.Equal(files[e.File], c.sources[old.File]) || old.Broken() != e.Broken() || old.Diags.Error() != e.Diags.Error() {
			changed = append(changed, e)
		}
	}
	c.sources, c.entries = files, next
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
