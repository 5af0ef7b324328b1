package sidecar_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// NSO-02 for a detached run served over the wire: a retained run
// started through providers/remote against a real `agentrt serve`
// records in its run record the native session the served scripted
// provider's session reports (RouteSessionNativeSession), as the same
// run on the in-process scripted provider does — and a process that
// attaches to a record without it binds it. NSO-03: the session's
// public events never carry it, and neither log names it. On SQLite and
// PostgreSQL.
func TestServedDetachedRunRecordsTheNativeSessionNSO02(t *testing.T) {
	const token = "detached-native-serve-token"
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		base, serverLog := startAgentrtServe(t, token)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		tp, tapped := newTap(t, base)
		clientLog := &syncBuffer{}
		newRemote := func() *remote.Provider {
			rp, err := remote.New(remote.Options{BaseURL: tapped, Token: token, RetryBackoff: 10 * time.Millisecond,
				Logger: slog.New(slog.NewJSONHandler(clientLog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			return rp
		}
		prof, err := profile.Parse([]byte(servedWriter))
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		key, turn := "detached-native", "turn-1"
		run, err := retained.StartRetainedRun(ctx, retained.StartOptions{Provider: newRemote(), Store: st,
			Environment: &contract.CreateInput{IdempotencyKey: &key, Profile: profile.Ref{Inline: prof}},
			Turn:        contract.TurnInput{TurnID: &turn, Prompt: new("write a note")},
			OnAdmission: func(context.Context, retained.Admission) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		ref := run.ControlRef()
		if ref.Run.SessionID == "" {
			t.Fatalf("the run's control reference names no session: %+v", ref)
		}
		rec, err := retained.Load(ctx, st, ref.Record)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Native == nil {
			t.Fatalf("the retained record names no native session; client log:\n%s", clientLog.String())
		}
		want := *rec.Native
		if want.ExecutionID != ref.Run.ExecutionID || want.Provider != "scripted" || want.NativeSessionID == "" {
			t.Errorf("native session on the record %+v; want the scripted provider's, under execution %s", want, ref.Run.ExecutionID)
		}

		// A record written without it (an older agentrt) is bound by the
		// next process that attaches, through the route again.
		if _, err := st.UpdateRun(ctx, ref.Record, func(r *store.Run) error {
			r.Doc = r.Doc.Without("native")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := retained.Attach(ctx, newRemote(), st, ref.Record); err != nil {
			t.Fatal(err)
		}
		again, err := retained.Load(ctx, st, ref.Record)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, again.Native); diff != "" {
			t.Errorf("native session bound on attach (-first +attached):\n%s", diff)
		}

		// The tap keeps a path's answers end to end: one per read.
		route := strings.ReplaceAll(wire.RouteSessionNativeSession, "{session}", ref.Run.SessionID)
		route = route[strings.Index(route, "/sessions/"):]
		answers, paths := tp.received(func(p string) bool { return strings.HasSuffix(p, "/native-session") })
		if len(answers) != 1 || !strings.HasSuffix(paths[0], route) || bytes.Count(answers[0], []byte(`"nativeSessionId":"`+want.NativeSessionID+`"`)) != 2 {
			t.Errorf("the private session route answered %q at %v; want it read at …%s, with the id, at start and on attach", answers, paths, route)
		}
		events, _ := tp.received(func(p string) bool { return strings.HasSuffix(p, "/events") })
		for _, body := range events {
			if bytes.Contains(body, []byte(contract.EventTypeNativeSessionObserved)) || bytes.Contains(body, []byte(want.NativeSessionID)) {
				t.Errorf("a public event stream carries the native session:\n%s", body)
			}
		}
		evs, err := st.Events(ctx, ref.Record, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if body := string(canonjson.Marshal(e.Body)); e.Type == contract.EventTypeNativeSessionObserved || strings.Contains(body, want.NativeSessionID) {
				t.Errorf("the run's event %s holds the native session: %s", e.Type, body)
			}
		}
		for name, log := range map[string]string{"server": serverLog.String(), "client": clientLog.String()} {
			if strings.Contains(log, want.NativeSessionID) {
				t.Errorf("the %s's log names the native session:\n%s", name, log)
			}
		}
	})
}
