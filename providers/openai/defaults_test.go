package openai_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/openai"
)

// reroute sends every request to srv instead, recording the hosts the
// client asked for: api.openai.com cannot be reached from a test, but the
// provider still believes it is talking to it.
type reroute struct {
	srv   *url.URL
	mu    sync.Mutex
	hosts []string
}

func (r *reroute) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.URL.Host)
	r.mu.Unlock()
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.srv.Scheme, r.srv.Host
	req.Host = r.srv.Host
	return http.DefaultTransport.RoundTrip(req)
}

// A provider given only a key is on OpenAI's own endpoint and applies its
// rules by itself: it declares usage, and a profile's "openai/gpt-5.2"
// goes out as the bare id the transcript expects (a prefixed id would
// not match the recorded request).
func TestOfficialEndpointDefaults(t *testing.T) {
	srv := server(t, "text", transcript.ServerOptions{})
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rt := &reroute{srv: u}
	p, err := openai.NewProvider(openai.ProviderOptions{Options: openai.Options{APIKey: testKey, HTTPClient: &http.Client{Transport: rt}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !c.Usage {
		t.Error("usage not declared on OpenAI's own endpoint")
	}
	env, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: mustProfile(t, briefProfile)}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := collect(env.Stream(context.Background(), &contract.TurnInput{Prompt: str("Say hello.")}))
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if kind, ok := contract.EnvironmentEventTerminal(last); !ok || kind != contract.TerminalCompleted || last.Data["text"].Str() != "Hello!" {
		t.Errorf("last event %s %s", last.Type, kind)
	}
	if len(rt.hosts) != 1 || rt.hosts[0] != "api.openai.com" {
		t.Errorf("requests went to %v, want api.openai.com once", rt.hosts)
	}
}

// The same defaults hold when DefaultBaseURL is named explicitly, with
// or without its trailing slash; another endpoint is not vouched for and
// declares usage only when told.
func TestEndpointDefaultsFollowTheBaseURL(t *testing.T) {
	for _, tc := range []struct {
		baseURL, name string
		usage         bool
	}{
		{openai.DefaultBaseURL, "default base URL", true},
		{"https://api.openai.com/v1", "without the trailing slash", true},
		{"http://127.0.0.1:1/v1/", "another endpoint", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := openai.NewProvider(openai.ProviderOptions{Options: openai.Options{BaseURL: tc.baseURL, APIKey: testKey}})
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Capabilities(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.Usage != tc.usage {
				t.Errorf("usage %v, want %v", c.Usage, tc.usage)
			}
		})
	}
}
