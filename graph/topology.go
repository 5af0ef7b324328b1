package graph

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// topology is what a graph run's journal fixes of its graph, beside the
// budget and the brief its run-started record holds: each node's
// canonical profile (by digest) and each edge with the text its
// directive resolved to and its cap. It is journaled once, as a
// supervise.KindGraph record, when the run's brain first starts; a
// resume with a graph whose topology differs is refused (checkJournal)
// before anything runs, so a resumed run never re-spawns a node under
// another profile, runs another analyzes edge or counts a cap it did
// not journal.
type topology struct {
	Nodes []topoNode `json:"nodes"`
	Edges []topoEdge `json:"edges"`
}

// topoNode is a node of a topology: its id and its profile's digest.
type topoNode struct {
	ID      string `json:"id"`
	Profile string `json:"profile"`
}

// topoEdge is an edge of a topology: its id, its directive's handle and
// the digest of the text it resolved to, its cap and (delegates edges)
// its continuity.
type topoEdge struct {
	Edge          string `json:"edge"`
	Directive     string `json:"directive"`
	Text          string `json:"text"`
	MaxTraversals int    `json:"maxTraversals"`
	Continuity    string `json:"continuity,omitzero"`
}

// topologyOf is g's topology, nodes and edges in g's order; g validated
// against reg.
func topologyOf(g Graph, reg *Registry) (topology, error) {
	var t topology
	for i, n := range g.Nodes {
		d, err := profile.Digest(n.Profile)
		if err != nil {
			return topology{}, fmt.Errorf("graph: digesting %s.profile: %w", nodePath(i), err)
		}
		t.Nodes = append(t.Nodes, topoNode{ID: n.ID, Profile: d})
	}
	for _, e := range g.Edges {
		text, _ := reg.Resolve(e.Directive) // resolved at validation
		te := topoEdge{Edge: e.ID(), Directive: e.Directive, Text: canonjson.DigestBytes([]byte(text)), MaxTraversals: e.limit()}
		if e.Kind == Delegates {
			te.Continuity = e.Continuity
			if te.Continuity == "" {
				te.Continuity = ContinuityFresh
			}
		}
		t.Edges = append(t.Edges, te)
	}
	return t, nil
}

// decodeTopology decodes a journaled topology (a supervise.KindGraph
// record's data).
func decodeTopology(v canonjson.Value) (topology, error) {
	var t topology
	if err := canonjson.FromValue(v, &t); err != nil {
		return topology{}, err
	}
	// topologyOf writes each node and edge once, from a validated graph:
	// a repeated id (matched by id, one would hide the other) or a
	// negative cap is a damaged record, not a graph that changed.
	nodes := make(map[string]bool, len(t.Nodes))
	for i, n := range t.Nodes {
		if nodes[n.ID] {
			return topology{}, fmt.Errorf("%w: /nodes/%d repeats node %q", errBadTopology, i, n.ID)
		}
		nodes[n.ID] = true
	}
	edges := make(map[string]bool, len(t.Edges))
	for i, e := range t.Edges {
		switch {
		case edges[e.Edge]:
			return topology{}, fmt.Errorf("%w: /edges/%d repeats edge %q", errBadTopology, i, e.Edge)
		case e.MaxTraversals < 0:
			return topology{}, fmt.Errorf("%w: /edges/%d/maxTraversals is negative", errBadTopology, i)
		}
		edges[e.Edge] = true
	}
	return t, nil
}

// errBadTopology: a journaled topology is not one topologyOf writes.
var errBadTopology = errors.New("graph: the journaled topology is damaged")

// change is the first way in which given (this graph's topology)
// differs from journaled, as a *supervise.ResumeMismatchError pointing
// into the graph document, or nil when they are the same. Nodes and
// edges are matched by id, so an order changed alone is no change here
// (the brief holds the worker nodes' order).
func (given topology) change(journaled topology) *supervise.ResumeMismatchError {
	jNodes := map[string]topoNode{}
	for _, n := range journaled.Nodes {
		jNodes[n.ID] = n
	}
	seen := map[string]bool{}
	for i, n := range given.Nodes {
		p := "/nodes/" + strconv.Itoa(i)
		j, ok := jNodes[n.ID]
		switch {
		case !ok:
			return &supervise.ResumeMismatchError{Field: nodePath(i), Pointer: p, Journaled: "none", Given: "node " + strconv.Quote(n.ID)}
		case j.Profile != n.Profile:
			return &supervise.ResumeMismatchError{Field: nodePath(i) + ".profile", Pointer: p + "/profile", Journaled: j.Profile, Given: n.Profile}
		}
		seen[n.ID] = true
	}
	for _, n := range journaled.Nodes {
		if !seen[n.ID] {
			return &supervise.ResumeMismatchError{Field: "nodes", Pointer: "/nodes", Journaled: "node " + strconv.Quote(n.ID), Given: "none"}
		}
	}
	jEdges := map[string]topoEdge{}
	for _, e := range journaled.Edges {
		jEdges[e.Edge] = e
	}
	seen = map[string]bool{}
	for i, e := range given.Edges {
		p := "/edges/" + strconv.Itoa(i)
		j, ok := jEdges[e.Edge]
		mismatch := func(member, journaled, given string) *supervise.ResumeMismatchError {
			return &supervise.ResumeMismatchError{Field: edgePath(i) + "." + member, Pointer: p + "/" + member, Journaled: journaled, Given: given}
		}
		switch {
		case !ok:
			return &supervise.ResumeMismatchError{Field: edgePath(i), Pointer: p, Journaled: "none", Given: "edge " + e.Edge}
		case j.Directive != e.Directive:
			return mismatch("directive", j.Directive, e.Directive)
		case j.Text != e.Text:
			return mismatch("directive", e.Directive+" of text "+j.Text, e.Directive+" of text "+e.Text)
		case j.MaxTraversals != e.MaxTraversals:
			return mismatch("maxTraversals", strconv.Itoa(j.MaxTraversals), strconv.Itoa(e.MaxTraversals))
		case j.Continuity != e.Continuity:
			return mismatch("continuity", j.Continuity, e.Continuity)
		}
		seen[e.Edge] = true
	}
	for _, e := range journaled.Edges {
		if !seen[e.Edge] {
			return &supervise.ResumeMismatchError{Field: "edges", Pointer: "/edges", Journaled: "edge " + e.Edge, Given: "none"}
		}
	}
	return nil
}
