package netsafe

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrLocator is matched by a locator that cannot be mapped to an endpoint.
var ErrLocator = errors.New("netsafe: locator cannot be mapped to an endpoint")

// DefaultIPFSGateway is the public gateway IPFSURL uses when none is
// configured.
const DefaultIPFSGateway = "https://ipfs.io"

// S3URL maps an S3 locator to the URL the resolver fetches: endpoint (an
// S3-compatible service's base URL; "" means AWS for region, us-east-1
// when region is "") followed by the bucket and the key, path-style so a
// dotted bucket never breaks TLS name matching. Every key segment is
// escaped; empty, "." and ".." segments are refused, so the key names
// exactly one object of the bucket.
func S3URL(endpoint, bucket, key, region string) (string, error) {
	if bucket == "" || strings.ContainsAny(bucket, "/?#%") {
		return "", fmt.Errorf("%w: bucket %q", ErrLocator, bucket)
	}
	if endpoint == "" {
		if region == "" {
			region = "us-east-1"
		}
		if strings.ContainsAny(region, "/?#%@:") {
			return "", fmt.Errorf("%w: region %q", ErrLocator, region)
		}
		endpoint = "https://s3." + region + ".amazonaws.com"
	}
	p, err := escapePath(key)
	if err != nil {
		return "", err
	}
	return join(endpoint, url.PathEscape(bucket)+"/"+p)
}

// IPFSURL maps an IPFS locator to its gateway URL: gateway ("" means
// DefaultIPFSGateway), "/ipfs/", the CID and the escaped path when set.
func IPFSURL(gateway, cid, path string) (string, error) {
	if gateway == "" {
		gateway = DefaultIPFSGateway
	}
	if cid == "" || strings.ContainsAny(cid, "/?#%") {
		return "", fmt.Errorf("%w: cid %q", ErrLocator, cid)
	}
	rest := "ipfs/" + cid
	if path != "" {
		p, err := escapePath(path)
		if err != nil {
			return "", err
		}
		rest += "/" + p
	}
	return join(gateway, rest)
}

// escapePath escapes each segment of a relative object path.
func escapePath(p string) (string, error) {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("%w: path %q has an empty, . or .. segment", ErrLocator, p)
		}
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/"), nil
}

// join appends rest to base, an absolute http(s) URL without query or
// fragment.
func join(base, rest string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: endpoint %q is not an http(s) base URL", ErrLocator, base)
	}
	return strings.TrimSuffix(base, "/") + "/" + rest, nil
}
