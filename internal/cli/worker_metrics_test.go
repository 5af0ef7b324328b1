package cli_test

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 14 (worker metrics): agentrt worker --metrics-listen, with no
// tracing configured, serves on its Prometheus endpoint the fleet's
// instruments (attempts started and runs ended by event, the queue
// depth, the event append latency) and the run metrics of its attempts
// (runs by status, turn latency), all defined once in
// telemetry/instruments; a turn whose usage is unknown records no token
// point (never a 0). OS-06. The test scrapes the real process.
func TestWorkerMetricsEndpointServesFleetAndRunMetrics(t *testing.T) {
	t.Parallel()
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "note.json", `{"turns":[{"repeat":true,"steps":[{"text":"A note."}]}]}`)
	worker, logs := startWorkerProcess(t, conn, schema, "metrics-worker", script, "--metrics-listen", "127.0.0.1:0")
	out, errOut, code := run(t, "", append([]string{"fleet", "submit", noteWriter, "--task", "Write a note."}, db...)...)
	runID := strings.TrimSpace(out)
	if code != 0 || runID == "" {
		t.Fatalf("fleet submit: %d %q %s", code, out, errOut)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _, _ := run(t, "", append([]string{"fleet", "show", runID, "--json"}, db...)...)
		if status := member(decode(t, out), "status").Str(); status == "completed" {
			break
		} else if time.Now().After(deadline) || status == "failed" || status == "cancelled" {
			t.Fatalf("the fleet run reads %q; the worker's log:\n%s", status, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m := metricsURL.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("the worker did not log its metrics address:\n%s", logs)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	line := func(name string, labels ...string) bool {
		for l := range strings.SplitSeq(body, "\n") {
			if !strings.HasPrefix(l, name+"{") {
				continue
			}
			all := true
			for _, want := range labels {
				all = all && strings.Contains(l, want)
			}
			if all {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"agentrt_fleet_runs_total", []string{`event="started"`, `queue="scripted"`}},
		{"agentrt_fleet_runs_total", []string{`event="completed"`, `queue="scripted"`}},
		{"agentrt_fleet_queue_depth", []string{`queue="scripted"`}},
		{"agentrt_fleet_event_append_duration_seconds_bucket", nil},
		{"agentrt_runs_total", []string{`tangle_run_status="completed"`, `tangle_tokens_known="false"`}},
		{"gen_ai_client_operation_duration_seconds_bucket", []string{`gen_ai_operation_name="chat"`}},
	} {
		if !line(c.name, c.labels...) {
			t.Errorf("the worker's metrics lack %s%v:\n%s", c.name, c.labels, body)
		}
	}
	if strings.Contains(body, "gen_ai_client_token_usage") {
		t.Errorf("a turn of unknown usage recorded token usage:\n%s", body)
	}
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- worker.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the worker exited with %v; its log:\n%s", err, logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker did not stop within 60 s of SIGTERM; its log:\n%s", logs)
	}
}
