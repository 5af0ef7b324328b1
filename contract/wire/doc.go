// Package wire is the provider contract over HTTP/JSON and server-sent
// events: the routes, request and response bodies, error bodies and the
// SSE framing that the sidecar serves and providers/remote speaks. It
// owns the strict, size-limited decoding of every body on both sides; it
// does no I/O beyond reading and writing the frames it is handed, and it
// holds no state.
package wire
