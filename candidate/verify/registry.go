package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentrt/agentrt/candidate/netsafe"
)

// Registry is the network OCIStore of step 11: it fetches an image's
// index and manifests by digest from the image's registry (Docker Hub for
// names without a registry host) through a netsafe client, which refuses
// private and internal addresses at dial time and every redirect (spec
// candidate §3.6 applies to OCI resolvers too). Anonymous bearer tokens
// are obtained from the registry's token service when it asks for one;
// no credential is ever sent. The bytes are untrusted: the verifier
// checks every digest.
type Registry struct {
	// Client must be a netsafe client; nil means netsafe.NewClient with
	// the strict defaults.
	Client *http.Client
	// BaseURL replaces "https://" + the image's registry host (a mirror);
	// "" uses the host.
	BaseURL string
}

// ociAccept lists the manifest media types step 11 reads.
const ociAccept = ociIndexType + ", " + dockerListType + ", " + ociManifestType + ", " + dockerManifestType

// Blob fetches the manifest (or index) of image by digest.
func (r *Registry) Blob(ctx context.Context, image, digest string) ([]byte, error) {
	host, repo, err := splitImage(image)
	if err != nil {
		return nil, err
	}
	base := r.BaseURL
	if base == "" {
		base = "https://" + host
	}
	client := r.Client
	if client == nil {
		client = netsafe.NewClient(netsafe.Options{})
	}
	target := strings.TrimSuffix(base, "/") + "/v2/" + repo + "/manifests/" + url.PathEscape(digest)
	resp, err := r.get(ctx, client, target, "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		challenge := resp.Header.Get("WWW-Authenticate")
		resp.Body.Close()
		token, err := r.token(ctx, client, challenge)
		if err != nil {
			return nil, err
		}
		if resp, err = r.get(ctx, client, target, token); err != nil {
			return nil, err
		}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s has no manifest %s", ErrUnavailable, image, digest)
	default:
		return nil, fmt.Errorf("%w: %s from %s", netsafe.ErrStatus, resp.Status, resp.Request.URL.Redacted())
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxOCIBlob+1))
}

func (r *Registry) get(ctx context.Context, client *http.Client, target, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("verify: registry request: %w", err)
	}
	req.Header.Set("Accept", ociAccept)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return client.Do(req)
}

// token answers a Bearer challenge with an anonymous token from the
// realm it names (fetched through the same checking client).
func (r *Registry) token(ctx context.Context, client *http.Client, challenge string) (string, error) {
	scheme, params, ok := strings.Cut(challenge, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: the registry asks for %q authentication, not an anonymous bearer token", ErrUnavailable, scheme)
	}
	fields := challengeParams(params)
	realm, err := url.Parse(fields["realm"])
	if err != nil || fields["realm"] == "" {
		return "", fmt.Errorf("%w: the registry's token realm %q is not a URL", ErrUnavailable, fields["realm"])
	}
	q := realm.Query()
	for _, k := range []string{"service", "scope"} {
		if v := fields[k]; v != "" {
			q.Set(k, v)
		}
	}
	realm.RawQuery = q.Encode()
	data, err := netsafe.Fetch(ctx, client, realm.String(), 64<<10)
	if err != nil {
		return "", err
	}
	var answer struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return "", fmt.Errorf("verify: the registry's token answer: %w", err)
	}
	if answer.Token != "" {
		return answer.Token, nil
	}
	if answer.AccessToken != "" {
		return answer.AccessToken, nil
	}
	return "", errors.New("verify: the registry's token answer carries no token")
}

// challengeParams parses the key="value" list of a WWW-Authenticate
// challenge.
func challengeParams(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		s = strings.TrimLeft(s, ", ")
		key, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		var value string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				break
			}
			value, s = rest[1:1+end], rest[2+end:]
		} else {
			value, s, _ = strings.Cut(rest, ",")
		}
		out[strings.ToLower(strings.TrimSpace(key))] = value
	}
	return out
}

// splitImage returns the registry host and repository of an image
// reference (its tag or digest is not used: blobs are fetched by
// digest). A first component with a dot or colon, or "localhost", is a
// registry host; otherwise the image is on Docker Hub, where one-part
// names are in "library/".
func splitImage(image string) (host, repo string, err error) {
	name := image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	if name == "" || strings.HasSuffix(name, "/") {
		return "", "", fmt.Errorf("verify: %q is not an image reference", image)
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	switch {
	case hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost"):
		host, repo = first, rest
	case hasSlash:
		host, repo = "registry-1.docker.io", name
	default:
		host, repo = "registry-1.docker.io", "library/"+name
	}
	if host == "" || repo == "" || strings.Contains(repo, "//") {
		return "", "", fmt.Errorf("verify: %q is not an image reference", image)
	}
	return host, repo, nil
}
