package serve

import (
	"regexp"
	"strconv"
	"strings"

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
	State      string // pending, running, ok, failed, skipped
	Visits     int    // how many visits it had
	Frame      bool   // a loop's or map's frame around its body
}

// GraphEdge is a line from one box to the next.
type GraphEdge struct{ X1, Y1, X2, Y2 int }

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

var iterRE = regexp.MustCompile(`(#|\[)(\d+)\]?$`)

func statesOf(visits []VisitView) *nodeStates {
	ns := &nodeStates{state: map[string]string{}, visits: map[string]int{}, counts: map[string]int{}}
	rank := map[string]int{"": 0, "skipped": 1, "ok": 2, "interrupted": 3, "failed": 4, "running": 5}
	for _, v := range visits {
		segs := strings.Split(v.Visit, "/")
		for i, seg := range segs {
			if m := iterRE.FindStringSubmatchIndex(seg); m != nil {
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
type block struct {
	w, h  int
	place func(x, y int)
}

type graphBuilder struct {
	g  *Graph
	ns *nodeStates
}

// flowGraph lays out f for a run with these visits; nil without a flow.
func flowGraph(f *flows.Flow, visits []VisitView) *Graph {
	if f == nil || len(f.Nodes) == 0 {
		return nil
	}
	b := &graphBuilder{g: &Graph{}, ns: statesOf(visits)}
	top := b.sequence(f.Nodes, "")
	top.place(gapX, gapY)
	b.g.W, b.g.H = top.w+2*gapX, top.h+2*gapY
	return b.g
}

func (b *graphBuilder) box(x, y int, n *flows.Node, key, detail string, frame bool, w, h int) {
	state := b.ns.state[key]
	if state == "" {
		state = "pending"
	}
	if state == "interrupted" {
		state = "failed"
	}
	b.g.Boxes = append(b.g.Boxes, GraphBox{X: x, Y: y, W: w, H: h, Node: key, Label: n.ID, Detail: detail, State: state,
		Visits: b.ns.visits[key], Frame: frame})
}

func (b *graphBuilder) sequence(nodes []*flows.Node, prefix string) block {
	parts := make([]block, len(nodes))
	w, h := boxW, 0
	for i, n := range nodes {
		parts[i] = b.node(n, join(prefix, n.ID))
		w = max(w, parts[i].w)
		h += parts[i].h
	}
	h += gapY * max(0, len(parts)-1)
	return block{w: w, h: h, place: func(x, y int) {
		for i, p := range parts {
			cx := x + (w-p.w)/2
			if i > 0 {
				b.g.Edges = append(b.g.Edges, GraphEdge{x + w/2, y - gapY, x + w/2, y})
			}
			p.place(cx, y)
			y += p.h + gapY
		}
	}}
}

func (b *graphBuilder) node(n *flows.Node, key string) block {
	switch n.Kind {
	case schema.KindLoop, schema.KindMap:
		body := b.sequence(n.Body(), key)
		w, h := body.w+2*framePad, body.h+frameHead+framePad
		return block{w: w, h: h, place: func(x, y int) {
			b.box(x, y, n, key, b.counted(n, key), true, w, h)
			body.place(x+framePad, y+frameHead)
		}}
	case schema.KindChoice, schema.KindParallel:
		var arms []block
		for _, br := range n.Branches() {
			prefix := key
			if n.Kind == schema.KindParallel {
				prefix = join(key, br.Name)
			}
			arms = append(arms, b.sequence(br.Nodes, prefix))
		}
		armsW, armsH := 0, 0
		for _, a := range arms {
			armsW += a.w
			armsH = max(armsH, a.h)
		}
		armsW += gapX * max(0, len(arms)-1)
		w, h := max(boxW, armsW), boxH+gapY+armsH
		return block{w: w, h: h, place: func(x, y int) {
			b.box(x+(w-boxW)/2, y, n, key, string(n.Kind)+" · "+strconv.Itoa(len(arms))+" branches", false, boxW, boxH)
			ax := x + (w-armsW)/2
			for _, a := range arms {
				b.g.Edges = append(b.g.Edges, GraphEdge{x + w/2, y + boxH, ax + a.w/2, y + boxH + gapY})
				a.place(ax, y+boxH+gapY)
				ax += a.w + gapX
			}
		}}
	}
	return block{w: boxW, h: boxH, place: func(x, y int) { b.box(x, y, n, key, leafDetail(n), false, boxW, boxH) }}
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
