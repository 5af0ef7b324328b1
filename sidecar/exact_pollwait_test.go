package sidecar_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
)

// pollWaitScript has one process that prints and then never ends.
const pollWaitScript = `{"turns":[{"repeat":true,"steps":[{"text":"Hello."}]}],"processes":[
 {"executable":"/bin/serve","output":[{"stdout":"ready\n"}],"hang":true}]}`

// The exact long polls (wait, output) wait no longer than the client's
// wire.QueryWaitMs when it is shorter than the server's ResultWait, so a
// client can bound each ask by the wait it asked for plus a grace and
// tell a paused server from a long wait; a malformed wait is refused.
func TestExactLongPollsHonourTheClientsWait(t *testing.T) {
	s, err := scripted.ParseScript([]byte(pollWaitScript))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serve(t, scripted.New(s, scripted.Options{}), sidecar.Options{ResultWait: 2 * time.Minute})
	status, body := do(t, ts, http.MethodPost, wire.PathExactEnvironments, exactCreateBody, nil)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	env, err := wire.ParseExactEnvironment(body)
	if err != nil {
		t.Fatal(err)
	}
	procs := "/v1/exact/environments/" + env.ID + "/processes"
	status, body = do(t, ts, http.MethodPost, procs, `{"operationId":"op-1","launch":{"executable":"/bin/serve","args":[],"cwd":"/tmp","env":{},"timeoutMs":600000}}`, nil)
	if status != http.StatusOK {
		t.Fatalf("spawn: %d %s", status, body)
	}
	st, err := wire.ParseExactProcessStatus(body)
	if err != nil {
		t.Fatal(err)
	}
	proc := procs + "/" + strconv.FormatInt(st.PID, 10)
	// Far under the server's two minutes, far over the 200 ms asked.
	const bound = 30 * time.Second

	start := time.Now()
	status, body = do(t, ts, http.MethodPost, proc+"/wait?"+wire.QueryWaitMs+"=200", "", nil)
	if took := time.Since(start); took > bound {
		t.Errorf("a wait asked for 200 ms answered after %v", took)
	}
	if res, err := wire.ParseExactWaitResult(body); status != http.StatusOK || err != nil || res.Termination != nil {
		t.Fatalf("the wait of a running process: %d %s (%v), want no termination", status, body, err)
	}

	// Past the process's output, nothing more arrives: the ask ends at
	// its wait with an empty chunk.
	start = time.Now()
	status, body = do(t, ts, http.MethodGet, proc+"/output/stdout?offset=6&"+wire.QueryWaitMs+"=200", "", nil)
	if took := time.Since(start); took > bound {
		t.Errorf("an output read asked for 200 ms answered after %v", took)
	}
	chunk, err := wire.ParseExactOutputChunk(body)
	if status != http.StatusOK || err != nil || chunk.End || chunk.Offset != 6 {
		t.Fatalf("output past the printed bytes: %d %s (%v), want an empty chunk at 6, not the end", status, body, err)
	}
	if data, _ := base64.StdEncoding.DecodeString(chunk.Data); len(data) != 0 {
		t.Errorf("output past the printed bytes: %q, want none", data)
	}

	for _, bad := range []string{"soon", "-1", strconv.Itoa(wire.MaxResultWaitMs + 1)} {
		status, body = do(t, ts, http.MethodPost, proc+"/wait?"+wire.QueryWaitMs+"="+bad, "", nil)
		wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/"+wire.QueryWaitMs))
		status, body = do(t, ts, http.MethodGet, proc+"/output/stdout?offset=0&"+wire.QueryWaitMs+"="+bad, "", nil)
		wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/"+wire.QueryWaitMs))
	}
}
