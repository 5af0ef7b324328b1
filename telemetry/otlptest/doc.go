// Package otlptest is a local OTLP/HTTP trace collector for tests: an
// httptest server that decodes each protobuf export request and keeps its
// spans (and the names of the metrics it is sent), so a test can check
// what a real exporter sent over the wire.
package otlptest
