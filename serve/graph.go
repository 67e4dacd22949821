package serve

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// Graph is a flow drawn for a run's page: its nodes in sequence, the
// branches of a choice or parallel side by side, a loop's or map's body
// inside a frame that counts its iterations or items, each node coloured
// by the state of its visits so far (docs/serve.md). It is laid out here
// and drawn by the page template as SVG: no script, no build step.
type Graph struct {
	W, H  int
	Boxes []GraphBox
	Edges []GraphEdge
}

// GraphBox is one node, or the frame of a loop's or map's body.
type GraphBox struct {
	X, Y, W, H int
	Node       string // the node's path with iterations and items left out: rounds/fan/work
	Label      string // the id
	Detail     string // the kind, agent, iterations or items
	State      string // pending, running, ok, failed, skipped; untaken, unreached once the run ended
	Visits     int    // how many visits it had
	Frame      bool   // a loop's or map's frame around its body
}

// GraphEdge is a line from one node to another, through Points (x, y
// pairs). Kind says what it draws: next (one node to the one after it),
// join (one of several edges into the node after a parallel, a choice or
// a map's items), branch (a choice or parallel to a branch), leave (a
// loop's body to its frame's foot).
type GraphEdge struct {
	From, To string
	Kind     string
	Points   []int
}

// Path is the edge's points as SVG polyline points: "x1,y1 x2,y2 …".
func (e GraphEdge) Path() string {
	var b strings.Builder
	for i := 0; i+1 < len(e.Points); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(e.Points[i]) + "," + strconv.Itoa(e.Points[i+1]))
	}
	return b.String()
}

const (
	boxW, boxH = 190, 46
	gapY, gapX = 22, 18
	framePad   = 12
	frameHead  = 40
)

// nodeStates sums a run's visits by node: the state that says most (one
// running, else one failed, else ok), how many visits, and the most
// iterations or items a loop or map got.
type nodeStates struct {
	state  map[string]string
	visits map[string]int
	counts map[string]int // loop: iterations; map: items
}

var iterRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(#|\[)(\d+)\]?$`) })

func statesOf(visits []VisitView) *nodeStates {
	ns := &nodeStates{state: map[string]string{}, visits: map[string]int{}, counts: map[string]int{}}
	rank := map[string]int{"": 0, "skipped": 1, "ok": 2, "interrupted": 3, "failed": 4, "running": 5}
	for _, v := range visits {
		segs := strings.Split(v.Visit, "/")
		for i, seg := range segs {
			if m := iterRE().FindStringSubmatchIndex(seg); m != nil {
				n, _ := strconv.Atoi(seg[m[4]:m[5]])
				segs[i] = seg[:m[0]]
				key := strings.Join(segs[:i+1], "/")
				ns.counts[key] = max(ns.counts[key], n)
			}
		}
		key := strings.Join(segs, "/")
		ns.visits[key]++
		if rank[v.Status] > rank[ns.state[key]] {
			ns.state[key] = v.Status
		}
	}
	return ns
}

// block is a laid-out part of the graph: its size, and how to place it.
// place returns the block's exits: where the edges to what follows it
// leave. A node has one; a choice or parallel one per branch, so that the
// node after it is joined to every branch.
type block struct {
	w, h  int
	place func(x, y int) []exit
}

// exit is where an edge leaves a block: at (x, y), from node (its key).
type exit struct {
	x, y int
	node string
}

type graphBuilder struct {
	g     *Graph
	ns    *nodeStates
	ended bool // the run ended: a node without visits was never reached
}

// flowGraph lays out f for a run with these visits; nil without a flow.
// ended says the run ended: its nodes without visits are then untaken
// (a branch its choice did not take) or unreached, not pending.
func flowGraph(f *flows.Flow, visits []VisitView, ended bool) *Graph {
	if f == nil || len(f.Nodes) == 0 {
		return nil
	}
	b := &graphBuilder{g: &Graph{}, ns: statesOf(visits), ended: ended}
	top := b.sequence(f.Nodes, "", "")
	top.place(gapX, gapY)
	b.g.W, b.g.H = top.w+2*gapX, top.h+2*gapY
	return b.g
}

// box adds a node's box; untaken says it is in a branch its choice did
// not take.
func (b *graphBuilder) box(x, y int, n *flows.Node, key, detail string, frame bool, w, h int, untaken bool) {
	state := b.ns.state[key]
	switch {
	case state == "interrupted":
		state = "failed"
	case state != "":
	case untaken:
		state = "untaken"
	case b.ended:
		state = "unreached"
	default:
		state = "pending"
	}
	b.g.Boxes = append(b.g.Boxes, GraphBox{X: x, Y: y, W: w, H: h, Node: key, Label: n.ID, Detail: detail, State: state,
		Visits: b.ns.visits[key], Frame: frame})
}

// edge draws a line through points (x, y pairs) from one node to another.
func (b *graphBuilder) edge(kind, from, to string, pts ...int) {
	b.g.Edges = append(b.g.Edges, GraphEdge{From: from, To: to, Kind: kind, Points: pts})
}

// join draws the edges from exits to the top of the node to at (x, y):
// one edge from each, a join when there are several. Each leaves its exit
// straight down to low (the bottom of what it comes from), so that edges
// from short branches do not cross their neighbours.
func (b *graphBuilder) join(exits []exit, to string, x, y, low int) {
	kind := "next"
	if len(exits) > 1 {
		kind = "join"
	}
	for _, e := range exits {
		if e.y < low {
			b.edge(kind, e.node, to, e.x, e.y, e.x, low, x, y)
		} else {
			b.edge(kind, e.node, to, e.x, e.y, x, y)
		}
	}
}

// sequence lays out nodes one under the other; prefix is their key's,
// untaken says they form a branch its choice did not take.
func (b *graphBuilder) sequence(nodes []*flows.Node, prefix string, untakenBy string) block {
	parts := make([]block, len(nodes))
	w, h := boxW, 0
	for i, n := range nodes {
		parts[i] = b.node(n, join(prefix, n.ID), untakenBy)
		w = max(w, parts[i].w)
		h += parts[i].h
	}
	h += gapY * max(0, len(parts)-1)
	return block{w: w, h: h, place: func(x, y int) []exit {
		var exits []exit
		for i, p := range parts {
			cx := x + (w-p.w)/2
			if i > 0 {
				b.join(exits, join(prefix, nodes[i].ID), x+w/2, y, y-gapY)
			}
			exits = p.place(cx, y)
			y += p.h + gapY
		}
		return exits
	}}
}

// untaken says whether a branch of the choice at key was not taken: the
// choice ended and no node of the branch has a visit.
func (b *graphBuilder) untaken(key string, br *flows.Branch) bool {
	switch b.ns.state[key] {
	case "ok", "failed":
	default:
		return false
	}
	for _, n := range br.Nodes {
		if b.ns.visits[join(key, n.ID)] > 0 {
			return false
		}
	}
	return true
}

func (b *graphBuilder) node(n *flows.Node, key string, untakenBy string) block {
	isUntaken := untakenBy != ""
	switch n.Kind {
	case schema.KindLoop, schema.KindMap:
		body := b.sequence(n.Body(), key, untakenBy)
		w, h := body.w+2*framePad, body.h+frameHead+framePad
		return block{w: w, h: h, place: func(x, y int) []exit {
			b.box(x, y, n, key, b.counted(n, key), true, w, h, isUntaken)
			bx, by := x+framePad, y+frameHead
			exits := body.place(bx, by)
			// Out of the body to the frame's foot: a map's items all join
			// there before what follows the map.
			kind := "leave"
			if n.Kind == schema.KindMap {
				kind = "join"
			}
			for _, e := range exits {
				b.edge(kind, e.node, key, e.x, e.y, e.x, y+h)
			}
			return []exit{{x + w/2, y + h, key}}
		}}
	case schema.KindChoice, schema.KindParallel:
		var arms []block
		var firsts []string
		for _, br := range n.Branches() {
			prefix := key
			if n.Kind == schema.KindParallel {
				prefix = join(key, br.Name)
			}
			by := untakenBy
			if by == "" && n.Kind == schema.KindChoice && b.untaken(key, br) {
				by = key
			}
			arms = append(arms, b.sequence(br.Nodes, prefix, by))
			first := key
			if len(br.Nodes) > 0 {
				first = join(prefix, br.Nodes[0].ID)
			}
			firsts = append(firsts, first)
		}
		armsW, armsH := 0, 0
		for _, a := range arms {
			armsW += a.w
			armsH = max(armsH, a.h)
		}
		armsW += gapX * max(0, len(arms)-1)
		w, h := max(boxW, armsW), boxH+gapY+armsH
		return block{w: w, h: h, place: func(x, y int) []exit {
			b.box(x+(w-boxW)/2, y, n, key, string(n.Kind)+" · "+strconv.Itoa(len(arms))+" branches", false, boxW, boxH, isUntaken)
			ax := x + (w-armsW)/2
			var exits []exit
			for i, a := range arms {
				top := y + boxH + gapY
				b.edge("branch", key, firsts[i], x+w/2, y+boxH, ax+a.w/2, top)
				out := a.place(ax, top)
				if len(out) == 0 { // an empty branch: straight through
					out = []exit{{ax + a.w/2, top, key}}
				}
				exits = append(exits, out...)
				ax += a.w + gapX
			}
			return exits
		}}
	}
	return block{w: boxW, h: boxH, place: func(x, y int) []exit {
		b.box(x, y, n, key, leafDetail(n), false, boxW, boxH, isUntaken)
		return []exit{{x + boxW/2, y + boxH, key}}
	}}
}

// counted says how far a loop or map got: "loop · iteration 2 of 3".
func (b *graphBuilder) counted(n *flows.Node, key string) string {
	c := b.ns.counts[key]
	if ln := n.AsLoop(); ln != nil {
		return "loop · " + strconv.Itoa(c) + " of max " + strconv.Itoa(ln.Max) + " iterations"
	}
	if c == 1 {
		return "map · 1 item"
	}
	return "map · " + strconv.Itoa(c) + " items"
}

func leafDetail(n *flows.Node) string {
	switch {
	case n.Agent() != nil:
		return "agent " + n.Agent().Name
	case n.AsCall() != nil:
		return "flow " + n.AsCall().Callee
	}
	return string(n.Kind)
}

func join(prefix, id string) string {
	if prefix == "" {
		return id
	}
	return prefix + "/" + id
}
