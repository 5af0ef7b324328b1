package sidecar_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
)

const (
	exactCreateBody = `{"image":"registry.example.com/providertest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",` +
		`"egress":{"mode":"blocked"},"maxLifetimeMs":600000,"resources":{"cpu":0.5,"memoryMb":256,"diskMb":1},"metadata":{},"idempotencyKey":"sidecar-exact"}`
	exactSpawnBody = `{"operationId":"op-1","launch":{"executable":"/opt/tool/greet","args":["--name","world"],"cwd":"/tmp","env":{},"timeoutMs":10000}}`
)

// EXP-11 over the wire: a spawn re-sent after a lost answer (the same
// operation id and launch) is answered with the process the first one
// started, never a second process; another launch under the used id is
// an idempotency conflict. Output is read from a byte offset, so a client
// that lost an answer resumes with nothing lost and nothing repeated.
func TestExactSpawnOnceAndOutputFromOffset(t *testing.T) {
	s, err := scripted.ParseScript([]byte(scripted.ConformanceScript))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serve(t, scripted.New(s, scripted.Options{}), sidecar.Options{})
	status, body := do(t, ts, http.MethodPost, wire.PathExactEnvironments, exactCreateBody, nil)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	env, err := wire.ParseExactEnvironment(body)
	if err != nil {
		t.Fatal(err)
	}
	procs := "/v1/exact/environments/" + env.ID + "/processes"
	var pids []int64
	for range 2 {
		status, body := do(t, ts, http.MethodPost, procs, exactSpawnBody, nil)
		if status != http.StatusOK {
			t.Fatalf("spawn: %d %s", status, body)
		}
		st, err := wire.ParseExactProcessStatus(body)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, st.PID)
	}
	if pids[0] != pids[1] {
		t.Fatalf("a re-sent spawn started pid %d after %d", pids[1], pids[0])
	}
	status, body = do(t, ts, http.MethodGet, procs, "", nil)
	if list, err := wire.ParseExactProcessList(body); status != http.StatusOK || err != nil || len(list.Processes) != 1 {
		t.Fatalf("after a re-sent spawn the environment lists %s (%d, %v), want one process", body, status, err)
	}
	other := `{"operationId":"op-1","launch":{"executable":"/opt/tool/greet","args":["--name","other"],"cwd":"/tmp","env":{},"timeoutMs":10000}}`
	status, body = do(t, ts, http.MethodPost, procs, other, nil)
	wantError(t, status, body, http.StatusConflict, wire.CodeIdempotencyConflict, nil)

	out := func(offset string) (string, bool) {
		t.Helper()
		status, body := do(t, ts, http.MethodGet, procs+"/"+strconv.FormatInt(pids[0], 10)+"/output/stdout?offset="+offset, "", nil)
		if status != http.StatusOK {
			t.Fatalf("output at %s: %d %s", offset, status, body)
		}
		chunk, err := wire.ParseExactOutputChunk(body)
		if err != nil {
			t.Fatal(err)
		}
		data, err := base64.StdEncoding.DecodeString(chunk.Data)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), chunk.End
	}
	// Read the whole stream by offset, as a resuming client does.
	var got string
	for range 100 {
		data, end := out(strconv.Itoa(len(got)))
		got += data
		if end {
			break
		}
	}
	if got != "hello world\n" {
		t.Fatalf("stdout read by offset: %q, want %q", got, "hello world\n")
	}
	if rest, _ := out("6"); rest != "world\n" {
		t.Errorf("stdout from offset 6: %q, want %q", rest, "world\n")
	}
	if past, end := out("100"); past != "" || !end {
		t.Errorf("stdout past its end: %q end=%v, want nothing and the end", past, end)
	}
	status, body = do(t, ts, http.MethodGet, procs+"/"+strconv.FormatInt(pids[0], 10)+"/output/stdout?offset=-1", "", nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/offset"))
	status, body = do(t, ts, http.MethodGet, procs+"/99", "", nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
}

// A provider without exact processes (the test script declares no
// process) is answered unsupported (422).
func TestExactUnsupportedWithoutTheAbility(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	status, body := do(t, ts, http.MethodPost, wire.PathExactEnvironments, exactCreateBody, nil)
	wantError(t, status, body, http.StatusUnprocessableEntity, wire.CodeUnsupported, nil)
}
