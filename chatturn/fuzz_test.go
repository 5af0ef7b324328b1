package chatturn_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentrt/agentrt/chatturn"
)

// The headers a client controls never panic the handler and are answered
// with a stream or a clear 4xx.
func FuzzHandlerHeaders(f *testing.F) {
	f.Add("", "", "")
	f.Add("2", "p:s:3", "text/event-stream")
	f.Add("-1", "x", "text/event-stream;q=0.5, application/json")
	f.Add("99999999999999999999", "", "\x00")
	f.Fuzz(func(t *testing.T, lastEventID, executionID, accept string) {
		rec := &recorder{}
		h := &chatturn.Handler{Turn: turnFor(rec, rec.producer("x"))}
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		req.Header.Set("Last-Event-ID", lastEventID)
		req.Header.Set(chatturn.HeaderExecutionID, executionID)
		req.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusConflict:
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}
