package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// RG-11, PRF-11: a seated run's record holds the identity of the profile
// it ran and the file it was read from — never the profile, whose seats
// name accounts — so agentrt runs resume RUN --seats FILE goes on without
// --profile, reading that file again. A --profile that is another profile
// is refused, naming the recorded digest; the same one is accepted; a
// file changed since is refused saying so; a record naming no file asks
// for --profile (a usage error), never guesses.
func TestRunsResumeUsesTheRecordedProfile(t *testing.T) {
	dir := t.TempDir()
	// The seats file names the scripts by paths relative to itself.
	writeFile := func(_ *testing.T, name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	writeFile(t, "alpha.json", `{"turns":[{"repeat":true,"steps":[{"text":"never"}]}],"accounts":{"acct-alpha":{"exhausted":true,"retryAfterMs":90000}}}`)
	writeFile(t, "bravo.json", `{"turns":[{"repeat":true,"steps":[{"text":"a release note"}]}],"accounts":{"acct-bravo":{}}}`)
	seats := writeFile(t, "seats.json", `{"accounts":{"acct-alpha":{"provider":"scripted","script":"alpha.json"}},
		"stages":{"1":{"provider":"scripted","script":"bravo.json"}}}`)
	prof := writeFile(t, "writer.json", seatedProfile)
	other := writeFile(t, "editor.json", strings.Replace(seatedProfile, `"name":"writer"`, `"name":"editor"`, 1))
	db := filepath.Join(dir, "runs.db")

	// A real seated run: stage 0 refused for quota, stage 1 completed.
	out, errOut, code := run(t, "", "run", prof, "--seats", seats, "--task", "write a note", "--db", db, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	id := member(decode(t, out), "runId").Str()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	done, err := st.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := kernel.DecodeSeatedRecord(done.Doc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse([]byte(seatedProfile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := profile.Digest(p)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ProfileDigest != want || rec.ProfileSource != prof {
		t.Fatalf("the seated run recorded profile %q from %q; want %s from %s", rec.ProfileDigest, rec.ProfileSource, want, prof)
	}
	if doc := string(canonjson.Marshal(done.Doc)); strings.Contains(doc, "acct-alpha") || strings.Contains(doc, "acct-bravo") {
		t.Errorf("the seated record names an account:\n%s", doc)
	}
	// died is the same run as its process left it had it died after
	// stage 0's refusal: interrupted, stage 0 recorded. keep says whether
	// its record names the profile's file (one read from stdin does not).
	died := func(name string, keep bool) string {
		r := *rec
		r.Stages, r.Terminal = r.Stages[:1], nil
		if !keep {
			r.ProfileSource = ""
		}
		doc, err := canonjson.ToValue(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateRun(ctx, store.Run{ID: name, Kind: kernel.KindSeated, Status: store.StatusInterrupted, Doc: doc}); err != nil {
			t.Fatal(err)
		}
		return name
	}

	t.Run("without --profile", func(t *testing.T) {
		run1 := died("died-1", true)
		out, errOut, code := run(t, "", "runs", "resume", run1, "--seats", seats, "--db", db, "--json", "--quiet")
		if code != 0 {
			t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
		}
		v := decode(t, out)
		if got := member(v, "runId").Str(); got != run1+".resume-1" || !member(v, "delivered").Bool() {
			t.Errorf("resumed %s (delivered %v); want %s.resume-1 delivered", got, member(v, "delivered").Bool(), run1)
		}
		resumed, err := kernel.ReadRun(ctx, st, run1+".resume-1")
		if err != nil || resumed.Seated == nil || resumed.Seated.ProfileDigest != want {
			t.Errorf("the resumption's record %+v (%v); want it to keep profile %s", resumed, err, want)
		}
	})
	t.Run("the same --profile", func(t *testing.T) {
		run2 := died("died-2", true)
		out, errOut, code := run(t, "", "runs", "resume", run2, "--profile", prof, "--seats", seats, "--db", db)
		if code != 0 || !strings.Contains(out, "completed, delivered") {
			t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("another --profile", func(t *testing.T) {
		run3 := died("died-3", true)
		out, errOut, code := run(t, "", "runs", "resume", run3, "--profile", other, "--seats", seats, "--db", db)
		if code != 1 || !strings.Contains(errOut, "resume it with the same profile") || !strings.Contains(errOut, want) {
			t.Fatalf("resume with another profile: exit %d; want 1 naming the recorded profile %s\n%s%s", code, want, out, errOut)
		}
		if _, err := st.GetRun(ctx, run3+".resume-1"); err == nil {
			t.Error("a refused resumption was recorded")
		}
	})
	t.Run("a profile file changed since", func(t *testing.T) {
		run4 := died("died-4", true)
		changed := strings.Replace(seatedProfile, `"name":"writer"`, `"name":"rewriter"`, 1)
		if err := os.WriteFile(prof, []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(prof, []byte(seatedProfile), 0o600)
		out, errOut, code := run(t, "", "runs", "resume", run4, "--seats", seats, "--db", db)
		if code != 1 || !strings.Contains(errOut, "has changed since") || !strings.Contains(errOut, "--profile") {
			t.Fatalf("resume after the profile file changed: exit %d; want 1 saying so\n%s%s", code, out, errOut)
		}
	})
	t.Run("a record without its profile file", func(t *testing.T) {
		old := died("died-old", false)
		out, errOut, code := run(t, "", "runs", "resume", old, "--seats", seats, "--db", db)
		if code != 2 || !strings.Contains(errOut, "--profile is required") {
			t.Fatalf("resume of a record without its profile: exit %d; want 2 asking for --profile\n%s%s", code, out, errOut)
		}
		out, errOut, code = run(t, "", "runs", "resume", old, "--profile", prof, "--seats", seats, "--db", db, "--quiet")
		if code != 0 {
			t.Fatalf("resume with --profile: exit %d\n%s%s", code, out, errOut)
		}
	})
}
